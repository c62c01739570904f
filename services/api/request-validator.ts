import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler';

type BuildCompiler = ReturnType<typeof AjvCompiler>;
/** At run time fastify calls a compiler with the route part, not with a bare schema as the package's types say. */
type RoutePartCompiler = (route: { httpPart?: string }) => unknown;

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
  return (route: { httpPart?: string }) => (route.httpPart === 'body' ? exact(route) : converting(route));
}

export const requestValidatorFactory = buildRequestValidator as unknown as ValidatorFactory;
