// Starts the Telegram bot (long polling): `npm start` in this folder, with the settings of README.md in the environment.
import { COMMANDS, createTelegramBot } from './bot.js';

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

const bot = createTelegramBot({
  token: required('TELEGRAM_BOT_TOKEN'),
  memorychat: { url: required('MEMORYCHAT_URL'), apiKey: required('MEMORYCHAT_API_KEY'), memoryScope: memoryScope() },
});
await bot.api.setMyCommands(COMMANDS);
process.once('SIGINT', () => bot.stop());
process.once('SIGTERM', () => bot.stop());
await bot.start({ onStart: (me) => console.log(`memorychat Telegram bot @${me.username} is polling`) });
