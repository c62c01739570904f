// Starts the Slack bot: `npm start` in this folder, with the settings of README.md in the environment.
import { createSlackBot } from './bot.js';

function memoryScope(): 'session' | 'user' | undefined {
  const value = process.env.MEMORYCHAT_SCOPE;
  if (value === undefined || value === '') return undefined;
  if (value === 'session' || value === 'user') return value;
  throw new Error(`MEMORYCHAT_SCOPE must be session or user, not ${value}`);
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see README.md)`);
  return value;
}

const app = createSlackBot({
  signingSecret: required('SLACK_SIGNING_SECRET'),
  botToken: required('SLACK_BOT_TOKEN'),
  memorychat: { url: required('MEMORYCHAT_URL'), apiKey: required('MEMORYCHAT_API_KEY'), memoryScope: memoryScope() },
});
const port = Number(process.env.PORT ?? 3000);
await app.start(port);
console.log(`memorychat Slack bot: events at http://0.0.0.0:${port}/slack/events`);
