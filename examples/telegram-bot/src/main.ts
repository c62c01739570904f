// Starts the Telegram bot (long polling): `npm start` in this folder, with the settings of README.md in the environment.
import { COMMANDS, createTelegramBot } from './bot.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (see README.md)`);
  return value;
}

const bot = createTelegramBot({
  token: required('TELEGRAM_BOT_TOKEN'),
  memorychat: { url: required('MEMORYCHAT_URL'), apiKey: required('MEMORYCHAT_API_KEY') },
});
await bot.api.setMyCommands(COMMANDS);
process.once('SIGINT', () => bot.stop());
process.once('SIGTERM', () => bot.stop());
await bot.start({ onStart: (me) => console.log(`memorychat Telegram bot @${me.username} is polling`) });
