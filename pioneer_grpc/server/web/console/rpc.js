// Connect calls of the same origin: unary calls in JSON, and server streams of enveloped JSON.
// The bearer token lives in the tab's sessionStorage and travels in the authorization header only.

const TOKEN_KEY = "pioneer-console-token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || "",
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  forget: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class RpcError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

function headers(contentType) {
  const found = { "content-type": contentType };
  const bearer = token.get();
  if (bearer) found.authorization = "Bearer " + bearer;
  return found;
}

export async function call(service, method, request) {
  const response = await fetch(`/pioneer.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/json"),
    body: JSON.stringify(request || {}),
  });
  const text = await response.text();
  const body = text ? JSON.parse(text) : {};
  if (!response.ok) throw new RpcError(body.code || "unknown", body.message || response.statusText, response.status);
  return body;
}

function envelope(message) {
  const data = new TextEncoder().encode(JSON.stringify(message));
  const framed = new Uint8Array(5 + data.length);
  new DataView(framed.buffer).setUint32(1, data.length);
  framed.set(data, 5);
  return framed;
}

// Calls onOpen once the server answered, then onMessage for each message of a server stream;
// resolves at its end, rejects on its error.
export async function stream(service, method, request, onOpen, onMessage, signal) {
  const response = await fetch(`/pioneer.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/connect+json"),
    body: envelope(request),
    signal,
  });
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    throw new RpcError(body.code || "unknown", body.message || response.statusText, response.status);
  }
  onOpen();
  const reader = response.body.getReader();
  let pending = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(pending.length + value.length);
    joined.set(pending);
    joined.set(value, pending.length);
    pending = joined;
    while (pending.length >= 5) {
      const size = new DataView(pending.buffer, pending.byteOffset).getUint32(1);
      if (pending.length < 5 + size) break;
      const flags = pending[0];
      const message = JSON.parse(new TextDecoder().decode(pending.subarray(5, 5 + size)));
      // A view, not a copy: a chunk holding a long backlog's thousand events was copied a thousand
      // times (seconds of a busy page for a 1,000-turn thread).
      pending = pending.subarray(5 + size);
      if (flags & 0x02) {
        if (message.error) throw new RpcError(message.error.code, message.error.message || "", 200);
        return;
      }
      await onMessage(message);
    }
  }
}
