import Type from 'typebox';

// Unions stay open (no additionalProperties: false): the API evolves, and Fastify's
// removeAdditional would strip fields while trying a branch of a union.

const Text = Type.Object({ type: Type.Literal('text'), text: Type.String() });
const Source = Type.Object({ type: Type.String({ description: 'base64 (replaced by a placeholder before storage), url, file, text' }) });

const AnthropicBlock = Type.Union([
  Text,
  Type.Object({ type: Type.Literal('image'), source: Source }),
  Type.Object({ type: Type.Literal('document'), source: Source }),
  Type.Object({
    type: Type.Literal('tool_use'),
    id: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    input: Type.Object({}),
  }),
  Type.Object({
    type: Type.Literal('tool_result'),
    tool_use_id: Type.String({ minLength: 1 }),
    content: Type.Optional(Type.Union([Type.Array(Type.Object({ type: Type.String() })), Type.String()])),
    is_error: Type.Optional(Type.Boolean()),
  }),
  Type.Object({ type: Type.Union([Type.Literal('thinking'), Type.Literal('redacted_thinking')]) }),
]);

const AnthropicMessage = Type.Object(
  {
    role: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    content: Type.Union([Type.Array(AnthropicBlock, { minItems: 1 }), Type.String()]),
  },
  { title: 'AnthropicMessage' },
);

const OpenAiPart = Type.Union([
  Text,
  Type.Object({ type: Type.Literal('image_url'), image_url: Type.Object({ url: Type.String() }) }),
  Type.Object({ type: Type.Literal('input_audio'), input_audio: Type.Object({ data: Type.String(), format: Type.String() }) }),
  Type.Object({ type: Type.Literal('file'), file: Type.Object({}) }),
  Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() }),
]);

const OpenAiMessage = Type.Object(
  {
    role: Type.Union([
      Type.Literal('system'),
      Type.Literal('developer'),
      Type.Literal('user'),
      Type.Literal('assistant'),
      Type.Literal('tool'),
    ]),
    content: Type.Optional(Type.Union([Type.Array(OpenAiPart), Type.String(), Type.Null()])),
    tool_calls: Type.Optional(
      Type.Array(
        Type.Object({
          id: Type.String({ minLength: 1 }),
          type: Type.Literal('function'),
          function: Type.Object({ name: Type.String({ minLength: 1 }), arguments: Type.String() }),
        }),
      ),
    ),
    tool_call_id: Type.Optional(Type.String({ minLength: 1 })),
    name: Type.Optional(Type.String()),
  },
  { title: 'OpenAiMessage' },
);

export const MessageChain = Type.Array(Type.Union([AnthropicMessage, OpenAiMessage]), {
  minItems: 1,
  maxItems: 500,
  description:
    "The turn's whole chain: user → assistant (tool_use / tool_calls) → tool results → … → final answer, in " +
    'Anthropic Messages or OpenAI Chat Completions form. Base64 images, audio and files are replaced by text ' +
    'placeholders such as "[image: photo]" before storage.',
});

export const ChainFormatSchema = Type.Union([Type.Literal('anthropic'), Type.Literal('openai')], {
  description: 'The format of `messages`; detected when absent (plain-text chains count as Anthropic).',
});
