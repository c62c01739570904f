// Examples of the main requests and replies for the OpenAPI document (Swagger UI pre-fills them,
// Redocly checks them against their schemas). One conversation runs through them all.

const SESSION_ID = '3f2c1b9e-8d4a-4c6e-9a1f-2b7d5e0c4a81';
const SALES_2024_SQL = 'SELECT region, SUM(amount) AS total FROM sales WHERE year = 2024 GROUP BY region';

export const memoryChatRequestExample = {
  question: 'What about 2023?',
  session_id: SESSION_ID,
  use_memory: true,
  vdp_database_names: 'sales_db',
};

export const memoryChatReplyExample = {
  answer: 'In 2023 the North region sold 1.2 M, the South 0.9 M.',
  sql_query: 'SELECT region, SUM(amount) AS total FROM sales WHERE year = 2023 GROUP BY region',
  tables_used: ['sales'],
  conversation_metadata: {
    conversation_id: SESSION_ID,
    session_key: null,
    session_name: 'Show me total sales by region for 2024',
    message_count: 2,
    created_at: '2026-11-20T09:00:00.000Z',
    updated_at: '2026-11-20T09:01:10.000Z',
    expires_at: '2026-11-27T09:01:10.000Z',
    is_summarized: false,
    summary_through_turn: null,
  },
  memory_context_used: {
    history_messages_count: 1,
    similar_queries_count: 0,
    history_turns: [1],
    similar_queries: [],
    context_tokens: 64,
    context_truncated: false,
    augmented_question: 'What about 2023?',
    custom_instructions: `Conversation so far:\nQ1: Show me total sales by region for 2024\nSQL: ${SALES_2024_SQL}`,
    applied: true,
    reason: 'applied',
  },
  memory_retrieval_time: 0.012,
  warnings: [],
};

export const memoryContextRequestExample = { question: 'And by product?', session_id: SESSION_ID, format: 'openai', max_tokens: 2000 };

const salesMemory = {
  session_id: SESSION_ID,
  turn_number: 1,
  question: 'Show me total sales by region for 2024',
  answer: 'North 1.4 M, South 1.1 M.',
  sql_query: SALES_2024_SQL,
  tables_used: ['sales'],
  created_at: '2026-11-20T09:00:00.000Z',
  similarity: 0.82,
};

export const memoryContextReplyExample = {
  session_id: SESSION_ID,
  expires_at: '2026-11-27T09:01:10.000Z',
  format: 'openai',
  question: 'And by product?',
  context_text: `Related earlier questions:\n- Show me total sales by region for 2024 (SQL: ${SALES_2024_SQL})`,
  augmented_question: `Related earlier questions:\n- Show me total sales by region for 2024 (SQL: ${SALES_2024_SQL})\n\nAnd by product?`,
  messages: [
    { role: 'user', content: 'What about 2023?' },
    { role: 'assistant', content: 'In 2023 the North region sold 1.2 M, the South 0.9 M.' },
  ],
  history_turns: [2],
  summary: null,
  slots: { year: 2023 },
  memories: [salesMemory],
  tokens: { summary: 0, slots: 4, history: 30, memories: 40, question: 4, total: 78 },
  truncated: false,
  warnings: [],
};

export const memorySearchRequestExample = { query: 'sales by region', k: 5 };

export const memorySearchReplyExample = {
  results: [
    {
      ...salesMemory,
      session_name: 'Show me total sales by region for 2024',
      status: 'ok',
      vdp_database_names: ['sales_db'],
      feedback_rating: null,
    },
  ],
};
