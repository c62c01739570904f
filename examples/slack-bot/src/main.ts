// Starts the Slack bot: `npm start` in this folder, with the settings of README.md in the environment.
import { createSlackBot } from './bot.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see README.md)`);
  return value;
}

const app = createSlackBot({
  signingSecret: required('SLACK_SIGNING_SECRET'),
  botToken: required('SLACK_BOT_TOKEN'),
  memorychat: { url: required('MEMORYCHAT_URL'), apiKey: required('MEMORYCHAT_API_KEY') },
});
const port = Number(process.env.PORT ?? 3000);
await app.start(port);
console.log(`memorychat Slack bot: events at http://0.0.0.0:${port}/slack/events`);
