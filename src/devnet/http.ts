import type { IncomingMessage, ServerResponse } from 'node:http';
import { errors, RpcError } from './errors.ts';
import { WEBRPC_HEADER } from './streams.ts';

const MAX_BODY_BYTES = 1024 * 1024;

/** Reads the whole request body as text; a body over 1 MiB is a bad request. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(errors.badRequest(`failed to read request data: body larger than ${MAX_BODY_BYTES} bytes`));
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', (error) => reject(errors.badRequest(`failed to read request data: ${error.message}`)));
  });
}

/** Parses a request body that must be one JSON object, the way a webrpc server reports failures. */
export function parseJsonObject(text: string): Record<string, unknown> {
  const parsed = parseJson(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw errors.badRequest(
      `failed to unmarshal request data: expected a JSON object, got ${Array.isArray(parsed) ? 'a list' : String(parsed === null ? 'null' : typeof parsed)}`,
    );
  }
  return parsed as Record<string, unknown>;
}

/** Parses JSON; a syntax error is a bad request. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw errors.badRequest(`failed to unmarshal request data: ${(error as Error).message}`);
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    webrpc: WEBRPC_HEADER,
    ...headers,
  });
  res.end(text);
}

export function sendText(
  res: ServerResponse,
  status: number,
  contentType: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Sends an error body `{error, code, msg, cause?, status}` with its status and headers. */
export function sendError(res: ServerResponse, error: RpcError): void {
  if (res.headersSent) {
    if (!res.writableEnded) res.end(`${JSON.stringify({ webrpcError: error.toBody() })}\n`);
    return;
  }
  sendJson(res, error.status, error.toBody(), error.headers);
}

export function asRpcError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  return errors.internal(error instanceof Error ? error.message : String(error));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
