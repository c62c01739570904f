/**
 * Semantic dedup (docs/design.md §6): the original (never another duplicate) of the most similar recent
 * question at or above the threshold. `vectors` are the new question's embedding followed by those of
 * the session's recent questions, in the order of `recent`.
 */
export function nearDuplicate(
  vectors: (number[] | null)[],
  recent: { turn_number: number; duplicate_of: number | null }[],
  threshold: number,
): number | null {
  const [question, ...others] = vectors;
  if (!question) return null;
  let best: { similarity: number; turn: (typeof recent)[number] } | undefined;
  others.forEach((vector, i) => {
    const turn = recent[i];
    if (!vector || !turn) return;
    const similarity = vector.reduce((sum, v, j) => sum + v * (question[j] ?? 0), 0);
    if (similarity >= threshold && (!best || similarity > best.similarity)) best = { similarity, turn };
  });
  return best ? (best.turn.duplicate_of ?? best.turn.turn_number) : null;
}
