import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { type MemoryCommand, recogniseMemoryCommand } from '../../../services/core/commands/recognise.js';

// The SParC dataset sits beside the repository, as for scripts/bench.
const SPARC_DEV = fileURLToPath(new URL('../../../../shared/data/sparc/dev.json', import.meta.url));

function sparcQuestions(): string[] {
  const dialogues = JSON.parse(readFileSync(SPARC_DEV, 'utf8')) as { interaction: { utterance: string }[] }[];
  return dialogues.flatMap((d) => d.interaction.map((i) => i.utterance));
}

// Written for this test, not taken from any dataset: how users of a chat box ask for the five commands.
const PHRASINGS: [string, MemoryCommand['name']][] = [
  ['show me the SQL', 'show_sql'],
  ['Show me the SQL for the first question', 'show_sql'],
  ['what query did you run for the previous question?', 'show_sql'],
  ['What query did you run for the Android question?', 'show_sql'],
  ['Can you show me the query you used?', 'show_sql'],
  ['show the sql', 'show_sql'],
  ['give me the SQL query', 'show_sql'],
  ['What SQL did you use?', 'show_sql'],
  ['which query did you use for that', 'show_sql'],
  ['Please show the generated SQL', 'show_sql'],
  ['show me the sql for question 2', 'show_sql'],
  ['What was the query for the second question?', 'show_sql'],
  ['can I see the SQL?', 'show_sql'],
  ['Show me the VQL you ran', 'show_sql'],
  ['what sql was executed for the revenue question', 'show_sql'],
  ["I'd like to see the query behind that answer", 'show_sql'],
  ['tell me the SQL you generated', 'show_sql'],
  ['SQL please', 'show_sql'],
  ['how did you get that?', 'show_sql'],
  ['Display the SQL statement for the last one', 'show_sql'],
  ['share the query you wrote for the sales question', 'show_sql'],
  ['what query was used for the first one', 'show_sql'],
  ['export that as CSV', 'export_csv'],
  ['download the results', 'export_csv'],
  ['Export the results to CSV please', 'export_csv'],
  ['can I download this as a spreadsheet?', 'export_csv'],
  ['give me that as csv', 'export_csv'],
  ['send me the data as a CSV file', 'export_csv'],
  ['export', 'export_csv'],
  ['download it', 'export_csv'],
  ['csv', 'export_csv'],
  ['save the table as csv', 'export_csv'],
  ['Could you export those results?', 'export_csv'],
  ['get me a CSV of the results', 'export_csv'],
  ['export the results of the first question as csv', 'export_csv'],
  ['download the data for the previous question', 'export_csv'],
  ['I want to download the results', 'export_csv'],
  ['export to excel', 'export_csv'],
  ['csv download link', 'export_csv'],
  ['/clear', 'forget'],
  ['forget this conversation', 'forget'],
  ['start over', 'forget'],
  ["Let's start over.", 'forget'],
  ['/reset', 'forget'],
  ['clear the chat', 'forget'],
  ['Please forget everything', 'forget'],
  ['reset the conversation', 'forget'],
  ['start from scratch', 'forget'],
  ['new conversation', 'forget'],
  ['wipe the history', 'forget'],
  ['forget what I said', 'forget'],
  ['clear my chat history', 'forget'],
  ['start a new chat', 'forget'],
  ['begin again', 'forget'],
  ['/forget', 'forget'],
  ['forget about this conversation', 'forget'],
  ['Forget everything we talked about', 'forget'],
  ['please forget what we discussed so far', 'forget'],
  ['delete this thread', 'forget'],
  ["don't remember this conversation", 'forget'],
  ['erase everything I asked you', 'forget'],
  ['what did I ask before?', 'recall'],
  ['list my questions', 'recall'],
  ['What were my previous questions?', 'recall'],
  ['show me my past questions', 'recall'],
  ['what have I asked so far', 'recall'],
  ['What did I ask you earlier?', 'recall'],
  ['list all my questions from this conversation', 'recall'],
  ['what have we talked about so far?', 'recall'],
  ['remind me what I asked', 'recall'],
  ['show the conversation history', 'recall'],
  ['chat history', 'recall'],
  ['recap our conversation', 'recall'],
  ['which questions did I ask', 'recall'],
  ['what was I asking about before?', 'recall'],
  ['what were my questions again', 'recall'],
  ['give me the questions I asked', 'recall'],
  ['keep this conversation to itself', 'memory_scope'],
  ['this conversation only', 'memory_scope'],
  ['/private', 'memory_scope'],
  ['Only use this chat', 'memory_scope'],
  ["don't use my other conversations", 'memory_scope'],
  ['make this chat private', 'memory_scope'],
  ['use my other conversations too', 'memory_scope'],
  ['/scope user', 'memory_scope'],
  ['share this conversation with my other chats', 'memory_scope'],
];

describe('memory command recognition', () => {
  it('when the 1,203 SParC dev questions are read, then none is taken for a memory command', () => {
    const questions = sparcQuestions();
    const triggered = questions.filter((q) => recogniseMemoryCommand(q) !== undefined);
    console.log(`memory commands: SParC dev false triggers ${triggered.length} of ${questions.length}`, triggered.slice(0, 10));
    expect(questions.length).toBe(1203);
    expect(triggered).toEqual([]);
  });

  it('when users phrase the five commands in their own words, then at least 95% are recognised as the right one', () => {
    const misses = PHRASINGS.filter(([text, name]) => recogniseMemoryCommand(text)?.name !== name);
    const recall = (PHRASINGS.length - misses.length) / PHRASINGS.length;
    console.log(
      `memory commands: phrasing recall ${PHRASINGS.length - misses.length} of ${PHRASINGS.length} (${(recall * 100).toFixed(1)}%)`,
      misses,
    );
    expect(PHRASINGS.length).toBeGreaterThanOrEqual(60);
    expect(recall).toBeGreaterThanOrEqual(0.95);
  });

  it('when a command names its turn, then the ordinal or the keywords are kept', () => {
    expect(recogniseMemoryCommand('show me the SQL for the first question')).toEqual({
      name: 'show_sql',
      target: { ref: { position: 'first' } },
    });
    expect(recogniseMemoryCommand('what query did you run for the previous question?')).toEqual({
      name: 'show_sql',
      target: { ref: { position: 'previous' } },
    });
    expect(recogniseMemoryCommand('what query did you run for the Android question')).toEqual({
      name: 'show_sql',
      target: { keywords: ['android'] },
    });
    expect(recogniseMemoryCommand('show me the sql for question 3')).toEqual({ name: 'show_sql', target: { ref: { number: 3 } } });
    expect(recogniseMemoryCommand('export that as CSV')).toEqual({ name: 'export_csv', target: { ref: { position: 'last' } } });
  });

  it('when a command comes with odd white space, closing punctuation or courtesy, then it is the same command', () => {
    const first = { name: 'show_sql', target: { ref: { position: 'first' } } };
    expect(recogniseMemoryCommand('  Show me\tthe   SQL for the\u00a0first question ?! ')).toEqual(first);
    expect(recogniseMemoryCommand('show me the sql for the first question, thank you.')).toEqual(first);
    expect(recogniseMemoryCommand('Show me the SQL for the first question , please !')).toEqual(first);
    expect(recogniseMemoryCommand('show me the sql for the first question now')).toEqual(first);
    // "again" and "now" kept at the end are part of a forget command's words; the trailing courtesy is not.
    expect(recogniseMemoryCommand('start over again')).toEqual({ name: 'forget' });
    expect(recogniseMemoryCommand('ok, clear the chat history, please')).toEqual({ name: 'forget' });
    expect(recogniseMemoryCommand('please')).toBeUndefined();
    expect(recogniseMemoryCommand(' ?! ')).toBeUndefined();
  });

  it('when the user sets the scope in words, then the command says which one', () => {
    expect(recogniseMemoryCommand('Keep this conversation to itself, please')).toEqual({ name: 'memory_scope', scope: 'session' });
    expect(recogniseMemoryCommand('/private')).toEqual({ name: 'memory_scope', scope: 'session' });
    expect(recogniseMemoryCommand('use my other conversations again')).toEqual({ name: 'memory_scope', scope: 'user' });
    expect(recogniseMemoryCommand('/scope user')).toEqual({ name: 'memory_scope', scope: 'user' });
  });

  it('when a data question merely mentions queries, exports or history, then it is no command', () => {
    for (const q of [
      'Show me the queries per customer in 2024',
      'What is the export volume of Germany?',
      'List the questions with more than 10 answers',
      'Clear sales by region',
      'Show the history of orders for customer 5',
      'What were the top 5 products?',
      'Download counts per app for Android',
      'Which sessions only use this room?',
      'Forget the customers without orders and list the rest',
      'Use other tables to count the orders',
      'What did we sell in the private label segment?',
    ]) {
      expect(recogniseMemoryCommand(q), q).toBeUndefined();
    }
  });
});
