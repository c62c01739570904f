/** What a GDPR request does: hand the user their data, or erase it (docs/design.md §7). */
export type GdprAction = 'export' | 'erase';
export type GdprStatus = 'queued' | 'running' | 'completed' | 'failed';
