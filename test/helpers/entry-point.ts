import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

export interface EntryPointRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A running bot process, started as `npm start` starts it, with its output collected as it comes. */
export interface RunningEntryPoint {
  child: ChildProcessWithoutNullStreams;
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the exit code and all output once the process has exited. */
  exited: Promise<EntryPointRun>;
}

export function spawnEntryPoint(env: Record<string, string>): RunningEntryPoint {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const running = { child, stdout: '', stderr: '' } as RunningEntryPoint & { stdout: string; stderr: string };
  child.stdout.on('data', (chunk: Buffer) => {
    running.stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    running.stderr += chunk.toString();
  });
  running.exited = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout: running.stdout, stderr: running.stderr }));
  });
  return running;
}

/** Runs the real entry point with piped input, and waits for it to exit (killed after 60 s). */
export async function runEntryPoint(input: string, env: Record<string, string>): Promise<EntryPointRun> {
  const running = spawnEntryPoint(env);
  const timer = setTimeout(() => running.child.kill('SIGKILL'), 60_000);
  running.child.stdin.end(input);
  try {
    return await running.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until `check` holds (polled), or `timeoutMs` passes. */
export async function waitUntil(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
}
