// `memorychat-client/langchain`: LangChain JS integrations (needs the optional peer @langchain/core).
export { MemorychatChatMessageHistory, type MemorychatChatMessageHistoryInput } from './chat-message-history.js';
export { MemorychatRetriever, type MemorychatRetrieverInput, type MemorychatTurnMetadata } from './retriever.js';
