/** Letters, marks, digits and underscores between spaces and punctuation. */
const WORD = /[\p{L}\p{M}\p{N}_]+/gu;
/**
 * Runs of scripts written without spaces between words (Chinese, Japanese, Korean), with the
 * long-vowel mark ー and the iteration mark 々, which Unicode files under no script.
 */
const UNSPACED_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30FC\u3005]+/gu;
const HAS_UNSPACED = new RegExp(UNSPACED_RUN.source, 'u');

/**
 * The words of a text, in order, with each run of an unspaced script inside a word handed over on its
 * own (`unspaced`), since no word boundary is written there: the lexical terms cut such runs into
 * character pairs, the local embedder into characters. The rest of such a word comes as words.
 */
export function forEachSegment(text: string, visit: (segment: string, unspaced: boolean) => void): void {
  // Most text has no such script: looking for runs in every word would cost a quarter of an embedding.
  const mixed = HAS_UNSPACED.test(text);
  for (const [word] of text.matchAll(WORD)) {
    if (!mixed) {
      visit(word, false);
      continue;
    }
    let last = 0;
    for (const run of word.matchAll(UNSPACED_RUN)) {
      if (run.index > last) visit(word.slice(last, run.index), false);
      visit(run[0], true);
      last = run.index + run[0].length;
    }
    if (last < word.length) visit(word.slice(last), false);
  }
}
