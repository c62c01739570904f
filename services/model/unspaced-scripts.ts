/**
 * Runs of scripts written without spaces between words (Chinese, Japanese, Korean), with the
 * long-vowel mark ー and the iteration mark 々, which Unicode files under no script. Both the lexical
 * terms and the local embedder split such runs themselves, since no word boundary is written.
 * Global: use with matchAll.
 */
export const UNSPACED_RUN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30FC\u3005]+/gu;
