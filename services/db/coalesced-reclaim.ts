import type { UserTable } from './user-tables.js';

/**
 * Joins the reclaims that erasures ask for into one run per window: the first request opens a window of
 * `windowMs`, every request until the window closes joins it, and one run then reclaims the union of
 * their tables. A request made while a run is under way opens the next window, whose run starts only
 * after the current one finished, since its rows may have been deleted after that run read its table.
 * N erasures finishing together cost one rewrite instead of N (docs/design.md §7).
 */
export function coalescedReclaim(run: (tables: UserTable[]) => Promise<void>, windowMs: number) {
  let running: Promise<void> = Promise.resolve();
  let open: { tables: Set<UserTable>; done: Promise<void> } | undefined;
  return (tables: readonly UserTable[]): Promise<void> => {
    if (!open) {
      const window = { tables: new Set<UserTable>(), done: Promise.resolve() };
      const previous = running;
      window.done = new Promise<void>((resolve) => setTimeout(resolve, windowMs))
        .then(() => previous.catch(() => {}))
        .then(() => {
          // The window closes when its run starts: later requests wait for the next one.
          if (open === window) open = undefined;
          return run([...window.tables]);
        });
      running = window.done;
      open = window;
    }
    for (const table of tables) open.tables.add(table);
    return open.done;
  };
}
