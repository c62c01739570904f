import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';

type BuildCompiler = ReturnType<typeof AjvCompiler>;
/** An Ajv validator as fastify calls it: the data, and the parent that lets Ajv coerce a root value. */
type Validator = ((data: unknown, dataContext?: unknown) => unknown) & { errors?: unknown; schemaEnv?: unknown };
/** At run time fastify calls a compiler with the route part, not with a bare schema as the package's types say. */
type RoutePartCompiler = (route: { httpPart?: string }) => Validator;

const compilerFromPool = AjvCompiler();

/**
 * Query strings, path parameters and headers arrive as text, so their values are converted to the
 * schema's types (`?limit=10`). A JSON body already carries its types: converting them would store
 * `{"question": false}` as the question "false", so bodies are validated as sent.
 */
function buildRequestValidator(...[externalSchemas, options = {}]: Parameters<BuildCompiler>) {
  const converting = compilerFromPool(externalSchemas, options) as unknown as RoutePartCompiler;
  const exact = compilerFromPool(externalSchemas, {
    ...options,
    customOptions: { ...options.customOptions, coerceTypes: false },
  } as typeof options) as unknown as RoutePartCompiler;
  return (route: { httpPart?: string }) => lazily(() => (route.httpPart === 'body' ? exact(route) : converting(route)));
}

/**
 * Compiled at its route's first request rather than at start: compiling every route's validators
 * was ~0.75 s of the API's ~4.8 s of CPU before it listened (a CPU profile of a start at a load
 * average of 35 on 2 cores), most of it for routes an instance may never serve.
 */
function lazily(compile: () => Validator): Validator {
  let validate: Validator | undefined;
  const lazy: Validator = (data, dataContext) => {
    validate ??= compile();
    const result = validate(data, dataContext);
    // fastify reads a failed validation's errors from the function it was given.
    lazy.errors = validate.errors;
    return result;
  };
  // fastify passes the parent only to functions that carry Ajv's schemaEnv; every validator here is Ajv's.
  lazy.schemaEnv = true;
  return lazy;
}

export const requestValidatorFactory = buildRequestValidator as unknown as ValidatorFactory;
