/**
 * The Denodo AI SDK's request models by release, as pydantic declares them in
 * `api/endpoints/answerQuestion.py` (and `answerDataQuestion.py`, `executeVQL.py`), with what FastAPI
 * makes of them: the 422 body for a wrong type and the `/openapi.json` it serves. Read from
 * denodo/denodo-ai-sdk: 0.5 at `public_v05` (d9ef6e5), 1.0 at 160cdfa1, 1.2.1 at 04604c6d, 1.4 at the
 * commit whose models declare `List[str]` and `filter_logic` (api/utils/param_descriptions). 0.13 is
 * 1.0's model without `check_ambiguity` and with `allow_external_associations` true by default: the
 * 1.0-beta release notes name both changes ("Made ambiguity detection optional … with check_ambiguity",
 * "Changed default value of allow_external_associations to false"); no 0.13 source is stored.
 * docs/denodo-ai-sdk.md#releases says how a release is added.
 */

export const SDK_RELEASES = ['0.5', '0.13', '1.2.1', '1.4'] as const;
export type SdkRelease = (typeof SDK_RELEASES)[number];

type FieldSpec =
  | { type: 'string'; default?: string; description?: string }
  | { type: 'boolean'; default?: boolean; description?: string }
  | { type: 'integer'; default?: number; ge?: number; le?: number; description?: string }
  | { type: 'number'; default?: number; description?: string }
  | { type: 'array'; description?: string }
  | { type: 'literal'; values: string[]; default: string; description?: string };

/** What differs between releases, beyond the request model. */
export interface ReleaseTraits {
  /** `vdp_database_names`, `vdp_tag_names`, `use_views` are `List[str]` (1.4) instead of comma-separated strings. */
  listFields: boolean;
  /** Clarifying questions: never (0.5), always (0.13), or unless `check_ambiguity: false` (1.0 on). */
  ambiguity: 'never' | 'always' | 'field';
  /** The request's custom_instructions follow the SDK's CUSTOM_INSTRUCTIONS (0.10.2 on) instead of replacing them. */
  mergesInstructions: boolean;
  /** `vdp_tag_names`, `vector_search_total_limit`, `allow_external_associations` exist (after 0.5). */
  tagsAndLimits: boolean;
  /** `filter_logic` joins database and tag filters with OR by default (1.4); before, a view had to pass both. */
  filterLogic: boolean;
  /** `/executeVQL` (1.2.1 on). */
  executeVql: boolean;
  /**
   * `GET /getUserPermissions` (read at 1.2 and 1.2.1; absent at 1.0): the caller's Data Marketplace
   * profile `{username, is_admin, roles, legacy_permissions_endpoint}`, no views. 1.4 adds the query
   * parameters `embeddings_provider`, `embeddings_model`, `vector_store_provider`.
   */
  userPermissions: boolean;
  /** Replies say `is_masked` (1.4) and `llm_provider`/`llm_model` (1.0 on). */
  isMasked: boolean;
  llmInReply: boolean;
}

const d = {
  databases:
    'A comma-separated list of databases to reduce the scope of the question to. If empty, all databases in the vector DB the user has permissions to will be considered.',
  tags: 'A comma-separated list of tags to reduce the scope of the question to. If empty, all tags in the vector DB the user has permissions to will be considered.',
  useViews:
    'Please specify a view you want the LLM to take into consideration when answering the question. Expected format is views separated by commas: database.view_name, database.view_name2',
  databasesList:
    'A list of databases to reduce the scope of the question to. If empty, all databases in the vector DB the user has permissions to will be considered.',
  tagsList:
    'A list of tags to reduce the scope of the question to. If empty, all tags in the vector DB the user has permissions to will be considered.',
  filterLogic:
    'How to combine vdp_database_names and vdp_tag_names when both are provided. OR (default) includes views matching any listed database or tag. AND includes only views that belong to one of the listed databases and one of the listed tags. Multiple databases or multiple tags are still combined with OR within that category.',
};

const MODE: FieldSpec = { type: 'literal', values: ['default', 'data', 'metadata'], default: 'default' };

const MODEL_0_5: Record<string, FieldSpec> = {
  question: { type: 'string' },
  plot: { type: 'boolean', default: false },
  plot_details: { type: 'string', default: '' },
  embeddings_provider: { type: 'string' },
  embeddings_model: { type: 'string' },
  vector_store_provider: { type: 'string' },
  sql_gen_provider: { type: 'string' },
  sql_gen_model: { type: 'string' },
  chat_provider: { type: 'string' },
  chat_model: { type: 'string' },
  vdp_database_names: { type: 'string' },
  use_views: { type: 'string', default: '' },
  expand_set_views: { type: 'boolean', default: true },
  custom_instructions: { type: 'string' },
  markdown_response: { type: 'boolean', default: true },
  vector_search_k: { type: 'integer', default: 5 },
  mode: MODE,
  disclaimer: { type: 'boolean', default: true },
  verbose: { type: 'boolean', default: true },
};

function model1x(release: '0.13' | '1.2.1' | '1.4'): Record<string, FieldSpec> {
  const lists = release === '1.4';
  return {
    question: { type: 'string' },
    plot: { type: 'boolean', default: false },
    plot_details: { type: 'string', default: '' },
    embeddings_provider: { type: 'string' },
    embeddings_model: { type: 'string' },
    vector_store_provider: { type: 'string' },
    llm_provider: { type: 'string' },
    llm_model: { type: 'string' },
    llm_temperature: { type: 'number', default: 0 },
    llm_max_tokens: { type: 'integer', default: 4096 },
    vdp_database_names: lists ? { type: 'array', description: d.databasesList } : { type: 'string', default: '', description: d.databases },
    vdp_tag_names: lists ? { type: 'array', description: d.tagsList } : { type: 'string', default: '', description: d.tags },
    ...(lists ? { filter_logic: { type: 'literal', values: ['AND', 'OR'], default: 'OR', description: d.filterLogic } as FieldSpec } : {}),
    allow_external_associations: { type: 'boolean', default: release === '0.13' },
    use_views: lists ? { type: 'array' } : { type: 'string', default: '', description: d.useViews },
    expand_set_views: { type: 'boolean', default: true },
    custom_instructions: { type: 'string', default: '' },
    markdown_response: { type: 'boolean', default: true },
    vector_search_k: { type: 'integer', default: 5 },
    vector_search_sample_data_k: { type: 'integer', default: 3 },
    vector_search_total_limit: { type: 'integer', default: 20 },
    vector_search_column_description_char_limit: { type: 'integer', default: 200 },
    ...(release === '0.13' ? {} : { vector_search_table_description_char_limit: { type: 'integer', default: 1000 } as FieldSpec }),
    mode: MODE,
    disclaimer: { type: 'boolean', default: true },
    verbose: { type: 'boolean', default: true },
    ...(release === '0.13'
      ? {}
      : { check_ambiguity: { type: 'boolean', default: true, description: 'If false, skip ambiguity detection.' } as FieldSpec }),
    ...(release === '0.13'
      ? {
          vql_execute_rows_limit: { type: 'integer', default: 100 } as FieldSpec,
          llm_response_rows_limit: { type: 'integer', default: 15 } as FieldSpec,
        }
      : {
          vql_execute_rows_limit: { type: 'integer', default: 100, ge: 1, le: 10000 } as FieldSpec,
          enable_query_fixer: { type: 'boolean', default: true } as FieldSpec,
          ...(lists ? { auto_fixing_attempts: { type: 'integer', default: 2, ge: 1, le: 5 } as FieldSpec } : {}),
          enable_query_reviewer: { type: 'boolean', default: false } as FieldSpec,
        }),
  };
}

export interface ReleaseModel {
  release: SdkRelease;
  /** The SDK's AI_SDK_VERSION, as `/openapi.json` reports it. */
  version: string;
  fields: Record<string, FieldSpec>;
  traits: ReleaseTraits;
}

export function releaseModel(release: SdkRelease): ReleaseModel {
  const after = (v: SdkRelease) => SDK_RELEASES.indexOf(release) >= SDK_RELEASES.indexOf(v);
  return {
    release,
    version: release,
    fields: release === '0.5' ? MODEL_0_5 : model1x(release),
    traits: {
      listFields: after('1.4'),
      ambiguity: release === '0.5' ? 'never' : release === '0.13' ? 'always' : 'field',
      mergesInstructions: after('0.13'),
      tagsAndLimits: after('0.13'),
      filterLogic: after('1.4'),
      executeVql: after('1.2.1'),
      userPermissions: after('1.2.1'),
      isMasked: after('1.4'),
      llmInReply: after('1.2.1'),
    },
  };
}

/** One entry of FastAPI's 422 `detail` (pydantic v2's error, without its `url`). */
export interface FieldProblem {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

const TRUE_WORDS = new Set(['true', '1', 'yes', 'on', 't', 'y']);
const FALSE_WORDS = new Set(['false', '0', 'no', 'off', 'f', 'n']);

/**
 * Pydantic's lax mode on a JSON body, as FastAPI validates it: a list is never a string, a string is
 * never a list; numbers and booleans may come as strings. Unknown fields are ignored (pydantic's default).
 */
export function validateBody(
  model: Record<string, FieldSpec>,
  body: unknown,
): { values?: Record<string, unknown>; problems: FieldProblem[] } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return {
      problems: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object', input: body }],
    };
  }
  const raw = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(model)) {
    const value = raw[name];
    if (value === undefined) {
      if (name === 'question' || name === 'vql') problems.push({ type: 'missing', loc: ['body', name], msg: 'Field required', input: raw });
      else if ('default' in spec && spec.default !== undefined) values[name] = spec.default;
      else if (spec.type === 'array') values[name] = [];
      continue;
    }
    const checked = checkValue(spec, value, ['body', name]);
    if ('problems' in checked) problems.push(...checked.problems);
    else values[name] = checked.value;
  }
  return problems.length ? { problems } : { values, problems };
}

function checkValue(spec: FieldSpec, value: unknown, loc: (string | number)[]): { value: unknown } | { problems: FieldProblem[] } {
  const one = (type: string, msg: string, ctx?: Record<string, unknown>) => ({
    problems: [{ type, loc, msg, input: value, ...(ctx ? { ctx } : {}) }],
  });
  switch (spec.type) {
    case 'string':
      return typeof value === 'string' ? { value } : one('string_type', 'Input should be a valid string');
    case 'boolean': {
      if (typeof value === 'boolean') return { value };
      if (value === 0 || value === 1) return { value: value === 1 };
      if (typeof value === 'string' && (TRUE_WORDS.has(value.toLowerCase()) || FALSE_WORDS.has(value.toLowerCase()))) {
        return { value: TRUE_WORDS.has(value.toLowerCase()) };
      }
      return typeof value === 'string' || typeof value === 'number'
        ? one('bool_parsing', 'Input should be a valid boolean, unable to interpret input')
        : one('bool_type', 'Input should be a valid boolean');
    }
    case 'integer': {
      let number: number;
      if (typeof value === 'number') {
        if (!Number.isInteger(value)) return one('int_from_float', 'Input should be a valid integer, got a number with a fractional part');
        number = value;
      } else if (typeof value === 'string') {
        if (!/^\s*[-+]?\d+\s*$/.test(value))
          return one('int_parsing', 'Input should be a valid integer, unable to parse string as an integer');
        number = Number(value);
      } else return one('int_type', 'Input should be a valid integer');
      if (spec.ge !== undefined && number < spec.ge) {
        return one('greater_than_equal', `Input should be greater than or equal to ${spec.ge}`, { ge: spec.ge });
      }
      if (spec.le !== undefined && number > spec.le)
        return one('less_than_equal', `Input should be less than or equal to ${spec.le}`, { le: spec.le });
      return { value: number };
    }
    case 'number': {
      if (typeof value === 'number') return { value };
      if (typeof value === 'string') {
        const number = Number(value);
        return value.trim() && Number.isFinite(number)
          ? { value: number }
          : one('float_parsing', 'Input should be a valid number, unable to parse string as a number');
      }
      return one('float_type', 'Input should be a valid number');
    }
    case 'array': {
      if (!Array.isArray(value)) return one('list_type', 'Input should be a valid list');
      const problems = value.flatMap((item, i) =>
        typeof item === 'string' ? [] : [{ type: 'string_type', loc: [...loc, i], msg: 'Input should be a valid string', input: item }],
      );
      return problems.length ? { problems } : { value };
    }
    case 'literal': {
      if (typeof value === 'string' && spec.values.includes(value)) return { value };
      const expected = spec.values.map((v) => `'${v}'`);
      const words = expected.length > 1 ? `${expected.slice(0, -1).join(', ')} or ${expected.at(-1)}` : expected[0]!;
      return one('literal_error', `Input should be ${words}`, { expected: words });
    }
  }
}

export const EXECUTE_VQL_MODEL: Record<string, FieldSpec> = {
  vql: { type: 'string', description: 'The VQL query to execute against the Denodo Platform.' },
  limit: {
    type: 'integer',
    default: 100,
    ge: 1,
    le: 10000,
    description: 'Maximum number of rows to return from the VQL execution result.',
  },
};

/** Pydantic's title of a field: its words, capitalised. */
const titleOf = (name: string) =>
  name
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');

function propertySchema(name: string, spec: FieldSpec): Record<string, unknown> {
  const common = { title: titleOf(name), ...(spec.description ? { description: spec.description } : {}) };
  switch (spec.type) {
    case 'array':
      return { items: { type: 'string' }, type: 'array', ...common };
    case 'literal':
      return { type: 'string', enum: spec.values, ...common, default: spec.default };
    case 'integer':
      return {
        type: 'integer',
        ...(spec.le !== undefined ? { maximum: spec.le } : {}),
        ...(spec.ge !== undefined ? { minimum: spec.ge } : {}),
        ...common,
        ...(spec.default !== undefined ? { default: spec.default } : {}),
      };
    default:
      return { type: spec.type, ...common, ...(spec.default !== undefined ? { default: spec.default } : {}) };
  }
}

function objectSchema(title: string, model: Record<string, FieldSpec>, required: string[]) {
  return {
    properties: Object.fromEntries(Object.entries(model).map(([name, spec]) => [name, propertySchema(name, spec)])),
    type: 'object',
    required,
    title,
  };
}

function postOperation(path: string, schema: string, tag: string) {
  const name = path.slice(1);
  const snake = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return {
    post: {
      tags: [tag],
      summary: titleOf(`${snake}_post`),
      operationId: `${snake}_post_${name}_post`,
      requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } }, required: true },
      responses: {
        '200': { description: 'Successful Response', content: { 'application/json': { schema: {} } } },
        '422': {
          description: 'Validation Error',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/HTTPValidationError' } } },
        },
      },
      security: [{ HTTPBasic: [] }, { HTTPBearer: [] }],
    },
  };
}

/** FastAPI's operation for `GET /getUserPermissions` (tag "Authentication"); 1.4 reads its query parameters. */
function userPermissionsOperation(model: ReleaseModel) {
  const query = ['embeddings_provider', 'embeddings_model', 'vector_store_provider'].map((name) => ({
    name,
    in: 'query',
    required: false,
    schema: { type: 'string', title: titleOf(name) },
  }));
  return {
    get: {
      tags: ['Authentication'],
      summary: 'Getuserpermissions',
      description:
        "Retrieves the authenticated user's profile, including their roles, global admin status,\nand whether the underlying Data Marketplace API is a legacy version.",
      operationId: 'getUserPermissions_getUserPermissions_get',
      ...(model.release === '1.4' ? { parameters: query } : {}),
      responses: {
        '200': {
          description: 'Successful Response',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/UserPermissionsResponse' } } },
        },
        ...(model.release === '1.4'
          ? {
              '422': {
                description: 'Validation Error',
                content: { 'application/json': { schema: { $ref: '#/components/schemas/HTTPValidationError' } } },
              },
            }
          : {}),
      },
      security: [{ HTTPBasic: [] }, { HTTPBearer: [] }],
    },
  };
}

const USER_PERMISSIONS_RESPONSE = {
  properties: {
    username: { type: 'string', title: 'Username' },
    is_admin: { type: 'boolean', title: 'Is Admin' },
    roles: { items: { type: 'string' }, type: 'array', title: 'Roles' },
    legacy_permissions_endpoint: { type: 'boolean', title: 'Legacy Permissions Endpoint' },
  },
  type: 'object',
  required: ['username', 'is_admin', 'roles', 'legacy_permissions_endpoint'],
  title: 'UserPermissionsResponse',
};

/** The `/openapi.json` FastAPI serves for the release: its answer endpoints and their request models. */
export function openApiDocument(model: ReleaseModel): Record<string, unknown> {
  const { question: _q, mode: _m, ...dataFields } = model.fields;
  return {
    openapi: '3.1.0',
    info: { title: 'Denodo AI SDK', summary: 'Be fearless.', version: model.version },
    paths: {
      '/answerQuestion': postOperation('/answerQuestion', 'answerQuestionRequest', 'Ask a Question'),
      '/answerDataQuestion': postOperation('/answerDataQuestion', 'answerDataQuestionRequest', 'Ask a Question'),
      '/answerMetadataQuestion': postOperation('/answerMetadataQuestion', 'answerMetadataQuestionRequest', 'Ask a Question'),
      '/streamAnswerQuestion': postOperation('/streamAnswerQuestion', 'streamAnswerQuestionRequest', 'Ask a Question - Streaming'),
      ...(model.traits.executeVql ? { '/executeVQL': postOperation('/executeVQL', 'executeVQLRequest', 'Utilities') } : {}),
      ...(model.traits.userPermissions ? { '/getUserPermissions': userPermissionsOperation(model) } : {}),
    },
    components: {
      schemas: {
        answerQuestionRequest: objectSchema('answerQuestionRequest', model.fields, ['question']),
        answerDataQuestionRequest: objectSchema('answerDataQuestionRequest', { question: model.fields.question!, ...dataFields }, [
          'question',
        ]),
        answerMetadataQuestionRequest: objectSchema('answerMetadataQuestionRequest', { question: model.fields.question!, ...dataFields }, [
          'question',
        ]),
        streamAnswerQuestionRequest: objectSchema('streamAnswerQuestionRequest', model.fields, ['question']),
        ...(model.traits.executeVql ? { executeVQLRequest: objectSchema('executeVQLRequest', EXECUTE_VQL_MODEL, ['vql']) } : {}),
        ...(model.traits.userPermissions ? { UserPermissionsResponse: USER_PERMISSIONS_RESPONSE } : {}),
        HTTPValidationError: {
          properties: { detail: { items: { $ref: '#/components/schemas/ValidationError' }, type: 'array', title: 'Detail' } },
          type: 'object',
          title: 'HTTPValidationError',
        },
        ValidationError: {
          properties: {
            loc: { items: { anyOf: [{ type: 'string' }, { type: 'integer' }] }, type: 'array', title: 'Location' },
            msg: { type: 'string', title: 'Message' },
            type: { type: 'string', title: 'Error Type' },
          },
          type: 'object',
          required: ['loc', 'msg', 'type'],
          title: 'ValidationError',
        },
      },
      securitySchemes: { HTTPBasic: { type: 'http', scheme: 'basic' }, HTTPBearer: { type: 'http', scheme: 'bearer' } },
    },
  };
}
