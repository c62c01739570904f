/**
 * The replay rules of the Anthropic Messages and OpenAI Chat Completions APIs that a history must
 * satisfy to be prepended to a request; each function lists the violations it finds.
 */
type Block = Record<string, any> & { type: string };

export function anthropicViolations(messages: any[]): string[] {
  const problems: string[] = [];
  if (messages.length && messages[0].role !== 'user') problems.push('the first message is not from the user');
  const blocks = (m: any): Block[] => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
  messages.forEach((m, i) => {
    if (m.role !== 'user' && m.role !== 'assistant') problems.push(`message ${i} has role ${m.role}`);
    if (i > 0 && messages[i - 1].role === m.role) problems.push(`messages ${i - 1} and ${i} are both ${m.role}`);
    if (!blocks(m).length) problems.push(`message ${i} is empty`);
    for (const b of blocks(m)) {
      if (b.type === 'text' && !b.text) problems.push(`message ${i} has an empty text block`);
      if (b.type === 'image' && b.source?.type === 'base64') problems.push(`message ${i} still holds base64 image data`);
      if (b.type === 'tool_result' && Array.isArray(b.content) && b.content.some((c: Block) => c.source?.type === 'base64')) {
        problems.push(`message ${i} holds base64 data inside a tool_result`);
      }
    }
    const uses = blocks(m)
      .filter((b) => b.type === 'tool_use')
      .map((b) => b.id);
    const results = blocks(m)
      .filter((b) => b.type === 'tool_result')
      .map((b) => b.tool_use_id);
    if (uses.length) {
      const next = messages[i + 1];
      const answered =
        next && next.role === 'user'
          ? blocks(next)
              .filter((b) => b.type === 'tool_result')
              .map((b) => b.tool_use_id)
          : [];
      for (const id of uses) if (!answered.includes(id)) problems.push(`tool_use ${id} in message ${i} has no tool_result right after`);
    }
    if (results.length) {
      const prev = messages[i - 1];
      const asked =
        prev && prev.role === 'assistant'
          ? blocks(prev)
              .filter((b) => b.type === 'tool_use')
              .map((b) => b.id)
          : [];
      for (const id of results)
        if (!asked.includes(id)) problems.push(`tool_result ${id} in message ${i} answers no tool_use right before`);
      const firstOther = blocks(m).findIndex((b) => b.type !== 'tool_result');
      if (
        firstOther !== -1 &&
        blocks(m)
          .slice(firstOther)
          .some((b) => b.type === 'tool_result')
      ) {
        problems.push(`message ${i} has tool_result blocks after other content`);
      }
    }
  });
  return problems;
}

export function openAiViolations(messages: any[]): string[] {
  const problems: string[] = [];
  let pending: string[] = [];
  messages.forEach((m, i) => {
    if (m.role === 'tool') {
      if (!pending.includes(m.tool_call_id)) problems.push(`tool message ${i} answers no pending tool_call (${m.tool_call_id})`);
      pending = pending.filter((id) => id !== m.tool_call_id);
      return;
    }
    if (pending.length) problems.push(`tool_calls ${pending.join(', ')} have no tool message before message ${i}`);
    pending = m.role === 'assistant' && m.tool_calls ? m.tool_calls.map((c: any) => c.id) : [];
    if (Array.isArray(m.content) && m.content.some((p: any) => p.type === 'image_url' && String(p.image_url?.url).startsWith('data:'))) {
      problems.push(`message ${i} still holds a data: image`);
    }
  });
  if (pending.length) problems.push(`tool_calls ${pending.join(', ')} are never answered`);
  return problems;
}
