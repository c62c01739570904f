/** A configuration the service refuses to start with; its message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
