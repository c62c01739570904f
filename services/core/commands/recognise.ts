import type { MemoryScope } from '../../model/sessions.js';
import type { TurnRef } from '../../model/turns.js';
import { questionKeywords } from '../recall/turn-refs.js';

/**
 * Memory commands typed into the chat box ("show me the SQL for the first question", "export that as
 * CSV", "/clear", "what did I ask before?"), answered from memory instead of by the answerer.
 *
 * Recognition is deliberately conservative: every pattern is anchored at both ends, so a command is a
 * whole message about the conversation itself. A data question that merely contains "query", "export"
 * or "list" never matches (test/core/commands/recognise.test.ts measures this on the SParC dev questions).
 */
export const MEMORY_COMMAND_NAMES = ['show_sql', 'export_csv', 'forget', 'recall', 'memory_scope'] as const;

export type MemoryCommandName = (typeof MEMORY_COMMAND_NAMES)[number];

/** A recognised command; every name but `forget`, `recall` and `memory_scope` is about one earlier turn. */
export type MemoryCommand =
  | { name: Exclude<MemoryCommandName, 'forget' | 'recall' | 'memory_scope'>; target: CommandTarget }
  | { name: Extract<MemoryCommandName, 'forget' | 'recall'> }
  | { name: Extract<MemoryCommandName, 'memory_scope'>; scope: MemoryScope };

/** Which earlier turn a command means: by reference, or by keywords of its question. */
export type CommandTarget = { ref: TurnRef } | { keywords: string[] };

const LAST: CommandTarget = { ref: { position: 'last' } };

// Courtesy around a command, removed before matching.
const LEADING = /^(?:(?:ok(?:ay)?|hey|hi|so|and|now|also|then|please|pls|kindly)[\s,]+)+/;
const POLITE =
  /^(?:(?:can|could|would|will) you (?:please )?|(?:can|could|may) i (?:please )?(?:see |get |have )?|i(?: would|'d| want to| wanna) (?:like to )?(?:see |get |have )?|let me (?:see |have )?)/;
const TRAILING = /(?:[\s,]+(?:please|pls|thanks|thank you|again|now))+$/;

/**
 * The message without case, courtesy or closing punctuation: `text` also without the trailing
 * courtesy, `whole` with "again", "now"... kept at its end. Both come from one pass over the message.
 */
function normalise(message: string): { text: string; whole: string } {
  const s = withoutClosingPunctuation(
    message
      .normalize('NFKC')
      .toLowerCase()
      .replace(/[’‘`]/g, "'")
      // Every run of white space as one space: only runs that are not one space already are rewritten,
      // so a question with plain spaces is not copied.
      .replace(/\s{2,}|[^\S ]/g, ' ')
      .trim(),
  )
    .replace(LEADING, '')
    .replace(POLITE, '');
  return { text: endsWithCourtesy(s) ? s.replace(TRAILING, '').trim() : s.trim(), whole: s.trim() };
}

const CLOSING_PUNCTUATION = new Set([' ', '?', '!', '.', ':', ';']);

/** `text` (its white space runs made single spaces) without the spaces and ?!.:; at its end. */
function withoutClosingPunctuation(text: string): string {
  let end = text.length;
  while (end > 0 && CLOSING_PUNCTUATION.has(text[end - 1]!)) end--;
  return end === text.length ? text : text.slice(0, end);
}

/** The last words TRAILING may remove ("thank you" ends in "you"): a message ending in any other needs no search for it. */
const COURTESY_LAST_WORDS = new Set(['please', 'pls', 'thanks', 'you', 'again', 'now']);

function endsWithCourtesy(text: string): boolean {
  const start = Math.max(text.lastIndexOf(' '), text.lastIndexOf(',')) + 1;
  return start > 0 && COURTESY_LAST_WORDS.has(text.slice(start));
}

const SQL_WORD =
  '(?:the |your |that |this |its )?(?:sql(?: query| statement| code)?|vql(?: query)?|query|generated sql|underlying (?:sql|query))';
const RAN = '(?:you |that you |that was )?(?:used|ran|run|executed|generated|wrote|created|produced)';
const TAIL = '(?: (?:for|of|behind|from|to answer|to get|used for|in) (.+))?';

const SHOW_SQL = [
  new RegExp(`^(?:show|give|tell|display|print|send|paste|share|reveal|get)(?: me| us)? ${SQL_WORD}(?: ${RAN})?${TAIL}$`),
  new RegExp(
    `^(?:what|which) (?:sql|vql|query|sql query|sql statement)(?: (?:did|do) you| was| were| have you| you)? (?:use|used|run|ran|execute|executed|generate|generated|write|wrote)${TAIL}$`,
  ),
  new RegExp(`^(?:what|which) (?:was|is) ${SQL_WORD}${TAIL}$`),
  new RegExp(`^(?:see|view) ${SQL_WORD}(?: ${RAN})?${TAIL}$`),
  new RegExp(`^${SQL_WORD}(?: ${RAN})?${TAIL}$`),
  /^how did you (?:get|compute|calculate|work out|come up with) (?:that|this|it|those numbers|these numbers|that answer|this answer)$/,
];

const RESULT_WORD =
  '(?:that|this|it|them|those|these|the (?:results?|data|table|rows|output|answer|numbers)|(?:those|these) (?:results|rows|numbers)|the result set)';
const FORMAT = '(?: (?:as|in|into|to) (?:an? |the )?(?:csv|excel|spreadsheet|xlsx|file)(?: file| format)?)';

const EXPORT_CSV = [
  new RegExp(`^(?:export|download|save|dump)(?: me)?(?: ${RESULT_WORD})?${FORMAT}?${TAIL}$`),
  new RegExp(`^(?:give|send|get|email)(?: me)? ${RESULT_WORD}${FORMAT}${TAIL}$`),
  new RegExp(
    `^(?:give|send|get)(?: me)? (?:an? |the )?(?:csv|excel|spreadsheet)(?: file| export| version| download)?(?: of ${RESULT_WORD})?${TAIL}$`,
  ),
  /^(?:csv|as csv|in csv|csv export|export to csv|csv download)$/,
  new RegExp(`^(?:a |the )?(?:csv(?: download| export)?|download|export) link${TAIL}$`),
];

const FORGET = [
  /^\/(?:clear|reset|forget|new|restart|start ?over)$/,
  /^(?:forget|clear|erase|wipe|reset|delete|drop)(?: out| about)?(?: all of| all)? (?:this|the|our|my|that) (?:conversation|chat|session|history|chat history|conversation history|context|memory|thread)(?: so far)?$/,
  /^(?:forget|clear|erase|wipe|reset)(?: out)? (?:everything|it all|all that|all of that|all of this|what i (?:said|asked)(?: before| so far)?|the memory|your memory|memory|history|context)$/,
  /^(?:let's |let us |we can |i want to |time to )?(?:start|begin) (?:over|again|afresh|fresh|from scratch|from the beginning|a new (?:conversation|chat|session)|a fresh (?:conversation|chat|session)|anew)$/,
  /^(?:new|fresh) (?:conversation|chat|session|start|topic)$/,
  /^(?:reset|restart|clear)(?: the)?(?: (?:chat|conversation|session|memory|context))?$/,
  /^(?:forget|erase|delete|wipe)(?: about)?(?: everything| all)?(?: that| what)? (?:we|i) (?:talked about|discussed|said|asked(?: you)?|asked about)(?: (?:so far|before|earlier|here|today|in this (?:conversation|chat|session)))?$/,
  /^(?:don't|do not|never) remember (?:this|the|our) (?:conversation|chat|session|thread)$/,
];

const CONVERSATION = '(?:conversation|chat|session|thread)';
const OTHERS = `(?:my |the |all my )?other ${CONVERSATION}s`;

// "This conversation only": the session keeps to itself (docs/memory-api.md#memory-scope).
const SESSION_SCOPE = [
  /^\/(?:private|session[- ]only|this[- ]only|scope session)$/,
  new RegExp(`^(?:keep|make) (?:this|the|our) ${CONVERSATION} (?:to itself|private|separate|isolated|on its own|session[- ]only)$`),
  new RegExp(`^(?:use )?(?:this|the current) ${CONVERSATION} only$`),
  new RegExp(`^(?:only use|use only) (?:this|the current) ${CONVERSATION}$`),
  new RegExp(`^(?:don't|do not|never) (?:use|look at|draw on|mix in) ${OTHERS}$`),
];

// Back to the default: the session recalls the user's other conversations, and they it.
const USER_SCOPE = [
  /^\/(?:scope user|shared)$/,
  new RegExp(`^(?:use|include|draw on|look at) ${OTHERS}(?: too| as well| again)?$`),
  new RegExp(`^(?:share|connect) (?:this|the|our) ${CONVERSATION}(?: with ${OTHERS})?$`),
];

const RECALL = [
  /^what (?:did|have|had) i (?:ask|asked|say|said|ask you|asked you)(?: you)?(?: (?:before|earlier|previously|so far|already|until now|today|in this (?:conversation|chat|session)))*$/,
  /^what (?:were|are|was) my (?:previous |past |earlier |last |other |recent )?(?:questions?|requests?)(?: (?:again|so far|before|in this (?:conversation|chat|session)))*$/,
  /^(?:list|show|give|tell|display|print)(?: me)?(?: all)? (?:of )?(?:my|the) (?:previous |past |earlier |prior |recent |asked |old |last )?(?:questions|requests|queries i asked|questions i (?:asked|have asked|'ve asked))(?: (?:so far|i asked|i've asked|i have asked|from (?:this|the|our) (?:conversation|chat|session)|in (?:this|the|our) (?:conversation|chat|session)|again))*$/,
  /^(?:list|show|give|display)(?: me)? (?:the |my |our )?(?:conversation|chat|session|question) history$/,
  /^(?:conversation|chat|question) history$/,
  /^what (?:have we|did we) (?:talk(?:ed)?|discuss(?:ed)?|cover(?:ed)?|go(?:ne)? over)(?: about)?(?: (?:so far|before|earlier|today))?$/,
  /^(?:remind me )?what (?:was|were) i (?:asking|asking about)(?: (?:before|earlier|previously))?$/,
  /^remind me (?:of )?(?:what i asked|my (?:previous |earlier |past )?questions)(?: (?:before|earlier|so far))?$/,
  /^(?:recap|summari[sz]e)(?: (?:our|the|this) (?:conversation|chat|session))?$/,
  /^which questions (?:did|have) i (?:ask|asked)(?: (?:before|earlier|so far))?$/,
];

const ORDINALS: Record<string, number> = {
  second: 2,
  third: 3,
  fourth: 4,
  fifth: 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
};

// Words that only say "a turn of this conversation", not which one.
const TARGET_FILLER = new Set(
  'the that this it my our your last latest previous prior earlier first one question questions answer answers result results before data table query sql'.split(
    ' ',
  ),
);

/** Which turn "the first question", "the one before", "question 3" or "the Android question" means. */
export function parseTarget(text: string | undefined): CommandTarget {
  if (!text) return LAST;
  const t = text.trim();
  if (
    /^(?:that|this|it|them|those|these|(?:the |that |this )?(?:last|latest|most recent|current)(?: (?:one|question|answer|result))?|(?:the |that |this )?(?:answer|result|results|question))$/.test(
      t,
    )
  )
    return LAST;
  if (/^(?:the |my )?(?:very )?first(?: (?:one|question|answer|query))?$/.test(t)) return { ref: { position: 'first' } };
  if (
    /^(?:the |my )?(?:previous|prior|earlier|one before|one before that|question before|second to last|penultimate)(?: (?:one|question|answer|query))?$|^before that$/.test(
      t,
    )
  )
    return { ref: { position: 'previous' } };
  const numbered =
    /^(?:(?:question|turn|query|answer|number|no\.?|#) ?#?(\d{1,6})|(?:the |my )?(\d{1,6})(?:st|nd|rd|th)(?: (?:one|question|answer|query))?)$/.exec(
      t,
    );
  if (numbered) return { ref: { number: Number(numbered[1] ?? numbered[2]) } };
  const ordinal = /^(?:the |my )?(second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)(?: (?:one|question|answer|query))?$/.exec(t);
  if (ordinal?.[1]) return { ref: { number: ORDINALS[ordinal[1]] ?? 1 } };
  const keywords = questionKeywords(t).filter((w) => !TARGET_FILLER.has(w) && !/^(?:about|on|regarding)$/.test(w));
  return keywords.length ? { keywords } : LAST;
}

/** The memory command a message is, or undefined for anything else (a question for the answerer). */
export function recogniseMemoryCommand(message: string): MemoryCommand | undefined {
  const { text, whole } = normalise(message);
  if (!text || text.length > 200) return undefined;
  for (const pattern of FORGET) if (pattern.test(text) || pattern.test(whole)) return { name: 'forget' };
  for (const pattern of SESSION_SCOPE) if (pattern.test(text)) return { name: 'memory_scope', scope: 'session' };
  for (const pattern of USER_SCOPE) if (pattern.test(text)) return { name: 'memory_scope', scope: 'user' };
  for (const pattern of RECALL) if (pattern.test(text)) return { name: 'recall' };
  for (const pattern of EXPORT_CSV) {
    const m = pattern.exec(text);
    if (m) return { name: 'export_csv', target: parseTarget(m[1]) };
  }
  for (const pattern of SHOW_SQL) {
    const m = pattern.exec(text);
    if (m) return { name: 'show_sql', target: parseTarget(m[1]) };
  }
  return undefined;
}
