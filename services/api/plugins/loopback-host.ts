import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { AppError } from '../../model/errors.js';

/** `127.0.0.1`, `localhost` or `[::1]`, with a port or without. */
const LOOPBACK_HOST = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$/i;

/** A Host header (or an Origin's host) that names this machine's loopback interface. */
export function isLoopbackHost(host: string | undefined): boolean {
  return host !== undefined && LOOPBACK_HOST.test(host);
}

/**
 * Local mode (no JWT setting) has tokens for the asking, so a web page must not reach it: listening
 * on 127.0.0.1 is not enough, since DNS rebinding points a name of the attacker's (`evil.example`)
 * at 127.0.0.1 and the browser then sends the page's requests here as same-origin ones. Such requests
 * still carry the attacker's name in Host, so in local mode any Host but a loopback name is refused
 * with 421 `misdirected-request`, before routing, on every route. The port is not compared: the name
 * is what a rebinding cannot forge, and a port-forward or proxy on this machine may change the port.
 * With configured JWT keys the service sits behind ingresses and names of its operator's, and every
 * request needs a token a web page cannot get, so Host is not checked.
 */
export default fp(
  async function loopbackHost(app: FastifyInstance, { config }: { config: Config }) {
    if (!config.localAuth) return;
    app.addHook('onRequest', async (request) => {
      if (!isLoopbackHost(request.headers.host)) {
        throw new AppError('misdirected-request', 'in local mode the service answers only to 127.0.0.1, localhost or [::1]');
      }
    });
  },
  { name: 'loopback-host', dependencies: ['problem-errors'] },
);
