/**
 * ANSWER_BACKEND: what answers a /memoryChat question (docs/design.md §5). The config schema, the
 * answerer's `kind` and the switch that makes the answerer all derive from this one list.
 */
export const ANSWER_BACKENDS = ['upstream', 'sql', 'none'] as const;

export type AnswerBackend = (typeof ANSWER_BACKENDS)[number];
