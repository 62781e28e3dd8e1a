import pino, { type Logger } from 'pino';

/** Paths whose values pino replaces, wherever they appear in a log object. */
export const REDACTED_PATHS = [
  'accessKey',
  'secretToken',
  'token',
  'password',
  '*.accessKey',
  '*.secretToken',
  '*.token',
  'headers.authorization',
  'headers["x-access-key"]',
  '*.headers.authorization',
  '*.headers["x-access-key"]',
  'config.discord.token',
  'config.telegram.token',
];

/**
 * The process logger: JSON lines on stderr (stdout belongs to the terminal chat) or appended to a
 * file (a path), secrets redacted by path, and every known secret value scrubbed from the final
 * line as a last guard.
 */
export function createLogger(
  level: string,
  secrets: readonly string[] = [],
  destination: NodeJS.WritableStream | number | string = 2,
): Logger {
  // A secret with a quote, a backslash or a control character appears escaped in a JSON line.
  const forms = [...new Set(secrets.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))];
  const scrub = (line: string): string => {
    let out = line;
    for (const secret of forms)
      if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join('[redacted]');
    return out;
  };
  return pino(
    {
      level,
      base: { app: 'floorwatch' },
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      hooks: { streamWrite: scrub },
    },
    typeof destination === 'number'
      ? pino.destination({ dest: destination, sync: true })
      : typeof destination === 'string'
        ? pino.destination({ dest: destination, sync: true, append: true, mkdir: true })
        : destination,
  );
}
