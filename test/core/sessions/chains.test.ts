import { describe, expect, it } from 'vitest';
import { chainAsAnthropic } from '../../../services/core/sessions/chain-conversion.js';
import { prepareMessageChain } from '../../../services/core/sessions/chains.js';
import { AppError } from '../../../services/model/errors.js';
import { anthropicViolations } from '../../support/fakes/chain-rules.js';

describe('prepareMessageChain', () => {
  it('when consecutive user messages hold text then tool results, then they merge with tool results first', () => {
    const chain = prepareMessageChain([
      { role: 'user', content: 'find eggs' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'find', input: {} }] },
      { role: 'user', content: 'also this' },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 't1',
            content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }],
          },
        ],
      },
      { role: 'assistant', content: 'done' },
    ]);
    expect(chain.format).toBe('anthropic');
    expect(chain.messages).toHaveLength(4);
    const merged = chain.messages[2]!.content as any[];
    expect(merged.map((b) => b.type)).toEqual(['tool_result', 'text']);
    expect(merged[0].content).toEqual([{ type: 'text', text: '[image: photo]' }]);
    expect(anthropicViolations(chain.messages)).toEqual([]);
  });

  it('when an OpenAI tool message answers no call, then it throws invalid-message-chain', () => {
    const attempt = () =>
      prepareMessageChain([
        { role: 'user', content: 'q' },
        { role: 'tool', tool_call_id: 'nope', content: 'x' },
        { role: 'assistant', content: 'a' },
      ]);
    expect(attempt).toThrowError(AppError);
    expect(attempt).toThrowError(/nope/);
  });

  it('when a chain mixes Anthropic blocks and OpenAI roles, then it is refused', () => {
    expect(() =>
      prepareMessageChain([
        { role: 'system', content: 's' },
        { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] },
        { role: 'assistant', content: 'a' },
      ]),
    ).toThrowError(/mixes/);
  });

  it('when an OpenAI chain with unparsable arguments is converted, then the call survives paired', () => {
    const chain = prepareMessageChain([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{oops' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'r' },
      { role: 'assistant', content: 'a' },
    ]);
    const messages = chainAsAnthropic(chain);
    expect(anthropicViolations(messages)).toEqual([]);
    expect((messages[1]!.content as any[])[0]).toEqual({ type: 'tool_use', id: 'c1', name: 'f', input: { arguments: '{oops' } });
  });
});
