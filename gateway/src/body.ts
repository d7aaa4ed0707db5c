// Request bodies: size limit (413), content codings (gzip, else 415), UTF-8 and JSON (400).
import { gunzip } from "node:zlib";
import type { ApiRequest } from "./context.ts";
import { EdgeError } from "./http-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The body's bytes, read from the stream's events (an async iterator over the request cost a
 * small POST 6-7 us more: 24 against 17-18 us of CPU per request in a bare server). A body over
 * the limit is answered 413 at once and the rest of it is drained, not kept; a body the client
 * cuts short is a 400 (no one may be left to read it).
 */
function readRaw(req: ApiRequest, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(EdgeError.tooLarge(limit));
  // Nothing more will come (a body already read counts as none).
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      done();
      req.resume();
      reject(EdgeError.tooLarge(limit));
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      done();
      reject(EdgeError.badRequest(`Request body could not be read: ${err.message}`));
    };
    const onClose = () => {
      done();
      reject(EdgeError.badRequest("Request body ended before its end"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

function inflate(raw: Buffer, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    gunzip(raw, { maxOutputLength: limit }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") reject(EdgeError.tooLarge(limit));
      else reject(EdgeError.badRequest("Request body is not valid gzip data"));
    }),
  );
}

/** Reads the body as text: decoded per Content-Encoding, checked for size and UTF-8. */
export async function readBodyText(req: ApiRequest, limit: number): Promise<string> {
  const coding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (coding !== "identity" && coding !== "gzip" && coding !== "x-gzip") {
    throw EdgeError.unsupportedMediaType(`Content-Encoding ${coding} is not supported; use gzip or none`);
  }
  let raw = await readRaw(req, limit);
  if (coding !== "identity") raw = await inflate(raw, limit);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw EdgeError.badRequest("Request body is not valid UTF-8");
  }
  if (text.trim() === "") throw EdgeError.badRequest("Request body is empty; a JSON object is required");
  return text;
}
