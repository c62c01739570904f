import { type FakeUpstream, startFakeUpstream } from '../fakes/fake-upstream.js';
import { startTestApp, type TestApp } from './test-app.js';

/** The service and the fake answerQuestion upstream it answers through. */
export interface ServiceWithUpstream {
  t: TestApp;
  upstream: FakeUpstream;
}

type Env = Record<string, string | undefined>;

/**
 * The set-up most service tests share: the fake upstream (answers every question with `salesReply`
 * unless told otherwise) and the real service in front of it (`startTestApp`), configured by `env`
 * on top of ANSWER_URL (a function when a setting names the upstream's address). When the service
 * fails to start, the upstream is closed before the error is thrown: a failed set-up leaves no
 * server behind.
 */
export async function startServiceWithUpstream(
  env: Env | ((upstream: FakeUpstream) => Env) = {},
  options: Parameters<typeof startTestApp>[1] = {},
): Promise<ServiceWithUpstream> {
  const upstream = await startFakeUpstream();
  try {
    const settings = typeof env === 'function' ? env(upstream) : env;
    return { t: await startTestApp({ ANSWER_URL: upstream.answerUrl, ...settings }, options), upstream };
  } catch (err) {
    await upstream.close();
    throw err;
  }
}

/**
 * Closes what `startServiceWithUpstream` started: the service first, as it may still be calling the
 * upstream. Either may be missing (afterAll runs when beforeAll failed).
 */
export async function stopServiceWithUpstream(service: Partial<ServiceWithUpstream>): Promise<void> {
  await service.t?.close();
  await service.upstream?.close();
}
