import { ApiError } from "@vnm/kit";
// Request bodies: size limit (413), content codings (gzip, else 415), UTF-8 and JSON (400).
import { gunzip } from "node:zlib";
import type { ApiRequest } from "./context.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

function tooLarge(limit: number): ApiError {
  return ApiError.http(413, `Request body is larger than the limit of ${limit} bytes`, [], { Connection: "close" });
}

async function readRaw(req: ApiRequest, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

function inflate(raw: Buffer, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    gunzip(raw, { maxOutputLength: limit }, (err, out) => {
      if (!err) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") reject(tooLarge(limit));
      else reject(ApiError.http(400, "Request body is not valid gzip data"));
    }),
  );
}

/** Reads the body as text: decoded per Content-Encoding, checked for size and UTF-8. */
export async function readBodyText(req: ApiRequest, limit: number): Promise<string> {
  const coding = (req.headers["content-encoding"] ?? "identity").trim().toLowerCase();
  if (coding !== "identity" && coding !== "gzip" && coding !== "x-gzip") {
    throw ApiError.http(415, `Content-Encoding ${coding} is not supported; use gzip or none`);
  }
  let raw = await readRaw(req, limit);
  if (coding !== "identity") raw = await inflate(raw, limit);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw ApiError.http(400, "Request body is not valid UTF-8");
  }
  if (text.trim() === "") throw ApiError.http(400, "Request body is empty; a JSON object is required");
  return text;
}
