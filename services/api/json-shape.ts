import type { FieldError } from '../model/errors.js';

/**
 * Bounds on the shape of a JSON body, checked on its text before it is parsed. Parsing, validating,
 * storing and forwarding a body cost CPU per value, not per byte: a 4 MB turn holding a two-million-
 * element array or 400,000 keys cost 1.2-1.5 s of the service's CPU (and seconds of the database's),
 * and parsing the 400,000 keys alone took 0.5 s, so one user within the rate limit could saturate the
 * service. Scanning the text costs a few milliseconds per megabyte; within these bounds a body costs
 * tens of milliseconds.
 */
export const JSON_BODY_LIMITS = {
  /** Deeper than any turn, chain or result needs, and far below what recursive serializers overflow at. */
  depth: 64,
  /** Items of one array: a stored result of 10,000 rows. */
  arrayItems: 10_000,
  /** Keys of one object: slots, metadata and result rows have a few dozen. */
  objectKeys: 1_000,
  /** Values in the whole body (every string, number, boolean, null, array and object). */
  values: 50_000,
} as const;

interface Container {
  isArray: boolean;
  /** Values started in it so far (for an object: its keys). */
  items: number;
  /** An object's current key, as its JSON text. */
  key: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The first bound the JSON text breaks, named by the field where it broke. It only counts: text that is
 * not JSON is left to the parser that runs after it.
 */
export function jsonShapeProblem(text: string, root = 'body'): FieldError | undefined {
  const open: Container[] = [];
  let values = 0;
  let expectingKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === ' ' || c === '\n' || c === '\r' || c === '\t' || c === ':') continue;
    if (c === ',') {
      expectingKey = open.length > 0 && !open.at(-1)!.isArray;
      continue;
    }
    if (c === '}' || c === ']') {
      open.pop();
      expectingKey = false;
      continue;
    }
    const start = i;
    if (c === '"') {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
      if (expectingKey) {
        open.at(-1)!.key = text.slice(start, i + 1);
        expectingKey = false;
        continue;
      }
    } else if (c !== '{' && c !== '[') {
      // A number, true, false or null: skip to its end.
      while (i + 1 < text.length && !',]} \n\r\t:'.includes(text[i + 1]!)) i++;
    }
    if (++values > JSON_BODY_LIMITS.values) return { field: root, message: `holds more than ${JSON_BODY_LIMITS.values} JSON values` };
    const parent = open.at(-1);
    if (parent && ++parent.items > (parent.isArray ? JSON_BODY_LIMITS.arrayItems : JSON_BODY_LIMITS.objectKeys)) {
      return parent.isArray
        ? { field: pathOf(root, open, open.length - 1), message: `has more than ${JSON_BODY_LIMITS.arrayItems} items` }
        : { field: pathOf(root, open, open.length - 1), message: `has more than ${JSON_BODY_LIMITS.objectKeys} keys` };
    }
    if (c === '{' || c === '[') {
      if (open.length >= JSON_BODY_LIMITS.depth) {
        return { field: pathOf(root, open, open.length), message: `is nested deeper than ${JSON_BODY_LIMITS.depth} levels` };
      }
      open.push({ isArray: c === '[', items: 0, key: '' });
      expectingKey = c === '{';
    }
  }
  return undefined;
}

/** The path of the value that `open[index]` is (its ancestors' current items). */
function pathOf(root: string, open: Container[], index: number): string {
  let path = root;
  for (const container of open.slice(0, index)) {
    path += container.isArray ? `[${container.items - 1}]` : `.${keyName(container.key)}`;
  }
  return path;
}

function keyName(json: string): string {
  try {
    return String(JSON.parse(json));
  } catch {
    return json;
  }
}
