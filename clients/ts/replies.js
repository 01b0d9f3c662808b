// From a provider's response to the entries to append: entriesOfResponse.
//
//   import { entriesOfResponse } from "./replies.js";
//   const reply = entriesOfResponse(Provider.ANTHROPIC_MESSAGES, await response.text(), "turn-7", 2);
//   reply.entries   // [] or [the assistant entry]: text, tool calls, reasoning; entryId "turn-7.r2"
//   reply.usage     // ProviderUsage (input counts cached tokens too), undefined when none was reported
//   reply.stop      // "end_turn", "tool_use", "max_tokens", "refusal", "content_filter", ...
//   reply.notKept   // paths of what the entry cannot hold (a thinking signature, redacted reasoning)
//
// The same function, with the same answers, is entries_of_response in Python and Rust and
// EntriesOfResponse in Go: tests/data/replies holds the responses all four are tested against.
// What cannot be mapped throws a ReplyError naming its code and path; nothing is dropped without a
// word. Types: replies.d.ts. Needs the stubs scripts/ts_client.sh generates into ./gen.
import { create } from "@bufbuild/protobuf";
import { ToolCallSchema } from "./gen/pioneer/v1/common_pb.js";
import { ConversationEntrySchema, EntryRole } from "./gen/pioneer/v1/history_pb.js";
import { Provider } from "./gen/pioneer/v1/provider_service_pb.js";
import { ProviderUsageSchema } from "./gen/pioneer/v1/usage_pb.js";

/** ReplyError codes, the same in every client. */
export const ReplyCode = Object.freeze({
  INVALID_ARGUMENT: "invalid_argument", // the caller's: an unknown provider, an empty turn id, a negative round
  NOT_JSON: "not_json", // the response is not JSON text, or not a JSON object
  ERROR_BODY: "error_body", // the provider's error body, or a response that failed
  MISSING: "missing", // a field the reply needs is absent or null
  WRONG_TYPE: "wrong_type", // a field of another type than the API documents
  UNSUPPORTED: "unsupported", // a content kind or state that no entry can hold
  BAD_ARGUMENTS: "bad_arguments", // tool call arguments that are not a JSON object
});

/** What stopped the model, in one vocabulary for every provider (reply.stop). */
export const Stop = Object.freeze({
  END_TURN: "end_turn",
  TOOL_USE: "tool_use",
  MAX_TOKENS: "max_tokens",
  STOP_SEQUENCE: "stop_sequence",
  PAUSE_TURN: "pause_turn",
  REFUSAL: "refusal",
  CONTENT_FILTER: "content_filter",
  CONTEXT_WINDOW_EXCEEDED: "context_window_exceeded",
  OTHER: "other",
});

const MAX_COUNT = 2 ** 31 - 1; // ProviderUsage's fields are int32

/** A response that cannot be turned into entries: `code` (ReplyCode) and the `path` it names. */
export class ReplyError extends Error {
  constructor(code, path, message) {
    super(path ? `${path}: ${message}` : message);
    this.name = "ReplyError";
    this.code = code;
    this.path = path;
  }
}

const fail = (code, path, message) => {
  throw new ReplyError(code, path, message);
};

const child = (path, key) => (path ? `${path}.${key}` : key);
const index = (path, i) => `${path}[${i}]`;

function kindOf(value) {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// JSON as every client reads it: a number beyond a double's range is no JSON they take.
function strictParse(text) {
  return JSON.parse(text, (_, value) => {
    if (typeof value === "number" && !Number.isFinite(value)) throw new SyntaxError("a number beyond a double's range");
    return value;
  });
}

function parseResponse(response) {
  let value = response;
  if (typeof response === "string" || response instanceof Uint8Array) {
    const text = typeof response === "string" ? response : new TextDecoder().decode(response);
    try {
      value = strictParse(text);
    } catch (error) {
      fail(ReplyCode.NOT_JSON, "", `the response is not JSON: ${error.message}`);
    }
  }
  if (!isObject(value)) fail(ReplyCode.NOT_JSON, "", `the response is a JSON ${kindOf(value)}, not an object`);
  return value;
}

const present = (body, key, path, required) => {
  const value = body == null ? undefined : body[key];
  if ((value === null || value === undefined) && required) fail(ReplyCode.MISSING, child(path, key), "absent");
  return value ?? null;
};
const asObject = (v, path) =>
  isObject(v) ? v : fail(ReplyCode.WRONG_TYPE, path, `an object was expected, not a ${kindOf(v)}`);
const asArray = (v, path) =>
  Array.isArray(v) ? v : fail(ReplyCode.WRONG_TYPE, path, `an array was expected, not a ${kindOf(v)}`);
const asText = (v, path) =>
  typeof v === "string" ? v : fail(ReplyCode.WRONG_TYPE, path, `a string was expected, not a ${kindOf(v)}`);

const obj = (body, key, path) => asObject(present(body, key, path, true), child(path, key));
const optObj = (body, key, path) => {
  const v = present(body, key, path, false);
  return v === null ? null : asObject(v, child(path, key));
};
const array = (body, key, path) => asArray(present(body, key, path, true), child(path, key));
const optArray = (body, key, path) => {
  const v = present(body, key, path, false);
  return v === null ? [] : asArray(v, child(path, key));
};
const text = (body, key, path) => asText(present(body, key, path, true), child(path, key));
const optText = (body, key, path) => {
  const v = present(body, key, path, false);
  return v === null ? null : asText(v, child(path, key));
};
/** A required string that must not be empty (an id, a tool name, a type). */
const name = (body, key, path) => text(body, key, path) || fail(ReplyCode.MISSING, child(path, key), "empty");
const item = (items, i, path) => asObject(items[i], index(path, i));

/** A token count (a whole number from 0 to 2^31 - 1), or undefined when absent. */
function count(body, key, path) {
  const v = present(body, key, path, false);
  if (v === null) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_COUNT) {
    fail(ReplyCode.WRONG_TYPE, child(path, key), `a token count from 0 to ${MAX_COUNT} was expected`);
  }
  return v;
}

function checkedSum(path, ...counts) {
  const total = counts.reduce((sum, c) => sum + (c ?? 0), 0);
  if (total > MAX_COUNT) fail(ReplyCode.WRONG_TYPE, path, `the counts add up past ${MAX_COUNT}`);
  return total;
}

/** Arguments given as JSON text: kept as they are, once known to be a JSON object ("" is none). */
function argumentsText(value, path) {
  if (value === null || value === undefined) fail(ReplyCode.MISSING, path, "absent");
  if (typeof value !== "string") fail(ReplyCode.WRONG_TYPE, path, `a string was expected, not a ${kindOf(value)}`);
  if (value.trim() !== "") {
    let parsed;
    try {
      parsed = strictParse(value);
    } catch (error) {
      fail(ReplyCode.BAD_ARGUMENTS, path, `the arguments are not JSON: ${error.message}`);
    }
    if (!isObject(parsed)) {
      fail(ReplyCode.BAD_ARGUMENTS, path, `the arguments are a JSON ${kindOf(parsed)}, not an object`);
    }
  }
  return value;
}

/** Arguments given as a JSON object, as canonical JSON text (canonicalJson). */
function argumentsObject(value, path) {
  if (value === null || value === undefined) fail(ReplyCode.MISSING, path, "absent");
  if (!isObject(value)) fail(ReplyCode.BAD_ARGUMENTS, path, `the arguments are a JSON ${kindOf(value)}, not an object`);
  return canonicalJson(value, path);
}

/**
 * A JSON value as every pioneer-grpc client writes it (RFC 8785's form): no spaces, keys sorted
 * by UTF-16 code units, numbers as JavaScript writes doubles, strings escaping only what JSON must.
 */
export function canonicalJson(value, path = "") {
  if (value === null) return "null";
  if (typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) fail(ReplyCode.BAD_ARGUMENTS, path, "a number beyond a double's range");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v, i) => canonicalJson(v, index(path, i))).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k], child(path, k))}`).join(",")}}`;
  }
  return fail(ReplyCode.BAD_ARGUMENTS, path, `a ${typeof value} is not a JSON value`);
}

/** The first key holding a value, in UTF-16 order (so every client names the same one). */
function firstKey(block, ignored = []) {
  const keys = Object.keys(block)
    .filter((k) => block[k] !== null && block[k] !== undefined && !ignored.includes(k))
    .sort();
  return keys.length ? keys[0] : null;
}

const unsupported = (path, what) => fail(ReplyCode.UNSUPPORTED, path, `${what}: no entry holds it`);
const stopOf = (table, reason) => (Object.hasOwn(table, reason) ? table[reason] : Stop.OTHER);

class Parts {
  texts = [];
  reasoning = [];
  calls = [];
  refusals = [];
  notKept = [];
  text(path, value) {
    if (value) this.texts.push([path, value]);
  }
  think(path, value) {
    if (value) this.reasoning.push([path, value]);
  }
  call(id, toolName, args) {
    this.calls.push(create(ToolCallSchema, { id, name: toolName, arguments: args }));
  }
  dropIf(present, path) {
    if (present) this.notKept.push(path);
  }
}

function newUsage(path, inputs, cacheRead, cacheWrite, outputs, reasoning) {
  return create(ProviderUsageSchema, {
    inputTokens: checkedSum(path, ...inputs),
    cacheReadInputTokens: cacheRead,
    cacheWriteInputTokens: cacheWrite,
    outputTokens: checkedSum(path, ...outputs),
    reasoningOutputTokens: reasoning,
  });
}

// --- Anthropic Messages ---------------------------------------------------------

const ANTHROPIC_STOPS = {
  end_turn: Stop.END_TURN,
  tool_use: Stop.TOOL_USE,
  max_tokens: Stop.MAX_TOKENS,
  stop_sequence: Stop.STOP_SEQUENCE,
  pause_turn: Stop.PAUSE_TURN,
  refusal: Stop.REFUSAL,
  model_context_window_exceeded: Stop.CONTEXT_WINDOW_EXCEEDED,
};

function anthropicBlock(block, path, parts) {
  const kind = name(block, "type", path);
  if (kind === "text") {
    parts.text(child(path, "text"), text(block, "text", path));
    parts.dropIf(optArray(block, "citations", path).length > 0, child(path, "citations"));
  } else if (kind === "thinking") {
    parts.think(child(path, "thinking"), text(block, "thinking", path));
    parts.dropIf(Boolean(optText(block, "signature", path)), child(path, "signature"));
  } else if (kind === "redacted_thinking") {
    parts.notKept.push(path);
  } else if (kind === "tool_use") {
    const args = argumentsObject(block.input, child(path, "input"));
    parts.call(name(block, "id", path), name(block, "name", path), args);
  } else {
    unsupported(child(path, "type"), `a ${JSON.stringify(kind)} block`);
  }
}

function readAnthropic(body, parts) {
  const blocks = array(body, "content", "");
  blocks.forEach((_, i) => anthropicBlock(item(blocks, i, "content"), index("content", i), parts));
  const reason = optText(body, "stop_reason", "") ?? "";
  const u = optObj(body, "usage", "");
  let usage;
  if (u !== null) {
    const fresh = count(u, "input_tokens", "usage");
    const read = count(u, "cache_read_input_tokens", "usage");
    const write = count(u, "cache_creation_input_tokens", "usage");
    const details = optObj(u, "output_tokens_details", "usage");
    const thinking = count(details, "thinking_tokens", "usage.output_tokens_details");
    const output = count(u, "output_tokens", "usage");
    usage = newUsage("usage", [fresh, read, write], read, write, [output], thinking);
  }
  return { reason, stop: stopOf(ANTHROPIC_STOPS, reason), usage };
}

// --- OpenAI Chat Completions ----------------------------------------------------

const CHAT_STOPS = {
  stop: Stop.END_TURN,
  tool_calls: Stop.TOOL_USE,
  function_call: Stop.TOOL_USE,
  length: Stop.MAX_TOKENS,
  content_filter: Stop.CONTENT_FILTER,
};

function onlyChoice(items, key) {
  if (items.length === 0) fail(ReplyCode.MISSING, key, "empty");
  if (items.length > 1) unsupported(index(key, 1), `${items.length} ${key}: one reply is one of them (ask for one)`);
  return item(items, 0, key);
}

function chatCall(call, path, parts) {
  const kind = optText(call, "type", path) || "function";
  if (kind !== "function") unsupported(child(path, "type"), `a ${JSON.stringify(kind)} tool call`);
  const fn = obj(call, "function", path);
  const fpath = child(path, "function");
  const args = argumentsText(fn.arguments ?? null, child(fpath, "arguments"));
  parts.call(name(call, "id", path), name(fn, "name", fpath), args);
}

function readOpenAIChat(body, parts) {
  const choice = onlyChoice(array(body, "choices", ""), "choices");
  const message = obj(choice, "message", "choices[0]");
  const path = "choices[0].message";
  parts.text(child(path, "content"), optText(message, "content", path));
  const refusal = optText(message, "refusal", path);
  if (refusal) parts.refusals.push(refusal);
  for (const key of ["audio", "function_call"]) {
    if (message[key] !== null && message[key] !== undefined) unsupported(child(path, key), `a message's ${key}`);
  }
  parts.dropIf(optArray(message, "annotations", path).length > 0, child(path, "annotations"));
  const callsPath = child(path, "tool_calls");
  const calls = optArray(message, "tool_calls", path);
  calls.forEach((_, j) => chatCall(item(calls, j, callsPath), index(callsPath, j), parts));
  const reason = optText(choice, "finish_reason", "choices[0]") ?? "";
  const u = optObj(body, "usage", "");
  let usage;
  if (u !== null) {
    const prompt = optObj(u, "prompt_tokens_details", "usage");
    const completion = optObj(u, "completion_tokens_details", "usage");
    usage = newUsage(
      "usage",
      [count(u, "prompt_tokens", "usage")],
      count(prompt, "cached_tokens", "usage.prompt_tokens_details"),
      count(prompt, "cache_write_tokens", "usage.prompt_tokens_details"),
      [count(u, "completion_tokens", "usage")],
      count(completion, "reasoning_tokens", "usage.completion_tokens_details"),
    );
  }
  return { reason, stop: stopOf(CHAT_STOPS, reason), usage };
}

// --- OpenAI Responses -----------------------------------------------------------

const INCOMPLETE_STOPS = { max_output_tokens: Stop.MAX_TOKENS, content_filter: Stop.CONTENT_FILTER };

function responsesMessage(message, path, parts) {
  const contentPath = child(path, "content");
  const content = array(message, "content", path);
  content.forEach((_, j) => {
    const ppath = index(contentPath, j);
    const part = item(content, j, contentPath);
    const kind = name(part, "type", ppath);
    if (kind === "output_text") {
      parts.text(child(ppath, "text"), text(part, "text", ppath));
      parts.dropIf(optArray(part, "annotations", ppath).length > 0, child(ppath, "annotations"));
    } else if (kind === "refusal") {
      parts.refusals.push(text(part, "refusal", ppath));
    } else {
      unsupported(child(ppath, "type"), `a ${JSON.stringify(kind)} content part`);
    }
  });
}

function responsesReasoning(reasoning, path, parts) {
  // The reasoning text itself when the model returns it, else its summary.
  for (const [key, want] of [
    ["content", "reasoning_text"],
    ["summary", "summary_text"],
  ]) {
    const keyPath = child(path, key);
    const pieces = optArray(reasoning, key, path);
    pieces.forEach((_, j) => {
      const ppath = index(keyPath, j);
      const piece = item(pieces, j, keyPath);
      const kind = name(piece, "type", ppath);
      if (kind !== want) unsupported(child(ppath, "type"), `a ${JSON.stringify(kind)} reasoning part`);
      parts.think(child(ppath, "text"), text(piece, "text", ppath));
    });
    if (pieces.length > 0) break;
  }
  parts.dropIf(Boolean(optText(reasoning, "encrypted_content", path)), child(path, "encrypted_content"));
}

function responsesItem(output, path, parts) {
  const kind = name(output, "type", path);
  if (kind === "message") responsesMessage(output, path, parts);
  else if (kind === "function_call") {
    const args = argumentsText(output.arguments ?? null, child(path, "arguments"));
    parts.call(name(output, "call_id", path), name(output, "name", path), args);
  } else if (kind === "reasoning") responsesReasoning(output, path, parts);
  else unsupported(child(path, "type"), `a ${JSON.stringify(kind)} output item`);
}

function readOpenAIResponses(body, parts) {
  const status = optText(body, "status", "") ?? "";
  if (status === "failed") fail(ReplyCode.ERROR_BODY, "status", "the response failed");
  if (["in_progress", "queued", "cancelled"].includes(status)) unsupported("status", `a response ${status}, not finished`);
  const outputs = array(body, "output", "");
  outputs.forEach((_, i) => responsesItem(item(outputs, i, "output"), index("output", i), parts));
  let reason = status;
  let stop = status === "completed" ? Stop.END_TURN : Stop.OTHER;
  if (status === "incomplete") {
    reason = optText(optObj(body, "incomplete_details", ""), "reason", "incomplete_details") || status;
    stop = stopOf(INCOMPLETE_STOPS, reason);
  }
  const u = optObj(body, "usage", "");
  let usage;
  if (u !== null) {
    const given = optObj(u, "input_tokens_details", "usage");
    const taken = optObj(u, "output_tokens_details", "usage");
    usage = newUsage(
      "usage",
      [count(u, "input_tokens", "usage")],
      count(given, "cached_tokens", "usage.input_tokens_details"),
      count(given, "cache_write_tokens", "usage.input_tokens_details"),
      [count(u, "output_tokens", "usage")],
      count(taken, "reasoning_tokens", "usage.output_tokens_details"),
    );
  }
  return { reason, stop, usage };
}

// --- Gemini generateContent -----------------------------------------------------

const GEMINI_STOPS = { STOP: Stop.END_TURN, MAX_TOKENS: Stop.MAX_TOKENS };
for (const reason of [
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "MODEL_ARMOR",
]) {
  GEMINI_STOPS[reason] = Stop.CONTENT_FILTER;
}
// Keys of a part that say something about its data but are none: neither kept nor refused.
const GEMINI_PART_META = ["thought", "thoughtSignature", "partMetadata", "videoMetadata", "mediaResolution"];

function geminiPart(part, path, parts) {
  parts.dropIf(Boolean(optText(part, "thoughtSignature", path)), child(path, "thoughtSignature"));
  const call = optObj(part, "functionCall", path);
  if (call !== null) {
    const cpath = child(path, "functionCall");
    // Gemini may leave the id out (it pairs results by order): the n-th call of the reply is call_n.
    const id = optText(call, "id", cpath) || `call_${parts.calls.length}`;
    const args =
      call.args === null || call.args === undefined ? "{}" : argumentsObject(call.args, child(cpath, "args"));
    parts.call(id, name(call, "name", cpath), args);
    return;
  }
  const value = optText(part, "text", path);
  if (value !== null) {
    if (part.thought === true) parts.think(child(path, "text"), value);
    else parts.text(child(path, "text"), value);
    return;
  }
  const other = firstKey(part, GEMINI_PART_META);
  if (other !== null) unsupported(child(path, other), `a part's ${other}`);
}

function geminiUsage(body) {
  const u = optObj(body, "usageMetadata", "");
  if (u === null) return undefined;
  const path = "usageMetadata";
  const thoughts = count(u, "thoughtsTokenCount", path);
  return newUsage(
    path,
    [count(u, "promptTokenCount", path), count(u, "toolUsePromptTokenCount", path)],
    count(u, "cachedContentTokenCount", path) ?? 0,
    undefined,
    [count(u, "candidatesTokenCount", path), thoughts],
    thoughts,
  );
}

function readGemini(body, parts) {
  const candidates = optArray(body, "candidates", "");
  if (candidates.length === 0) {
    const blocked = optText(optObj(body, "promptFeedback", ""), "blockReason", "promptFeedback");
    if (!blocked) fail(ReplyCode.MISSING, "candidates", "no candidate, and no promptFeedback.blockReason");
    return { reason: blocked, stop: Stop.CONTENT_FILTER, usage: geminiUsage(body) };
  }
  const candidate = onlyChoice(candidates, "candidates");
  const content = optObj(candidate, "content", "candidates[0]");
  if (content !== null) {
    const path = "candidates[0].content.parts";
    const found = optArray(content, "parts", "candidates[0].content");
    found.forEach((_, i) => geminiPart(item(found, i, path), index(path, i), parts));
  }
  const reason = optText(candidate, "finishReason", "candidates[0]") ?? "";
  return { reason, stop: stopOf(GEMINI_STOPS, reason), usage: geminiUsage(body) };
}

// --- Amazon Bedrock Converse ----------------------------------------------------

const BEDROCK_STOPS = {
  end_turn: Stop.END_TURN,
  tool_use: Stop.TOOL_USE,
  max_tokens: Stop.MAX_TOKENS,
  stop_sequence: Stop.STOP_SEQUENCE,
  guardrail_intervened: Stop.CONTENT_FILTER,
  content_filtered: Stop.CONTENT_FILTER,
  model_context_window_exceeded: Stop.CONTEXT_WINDOW_EXCEEDED,
};

const has = (block, key) => block[key] !== null && block[key] !== undefined;

function bedrockReasoning(block, path, parts) {
  const reasoning = obj(block, "reasoningContent", path);
  const rpath = child(path, "reasoningContent");
  const reasoningText = optObj(reasoning, "reasoningText", rpath);
  if (reasoningText !== null) {
    const tpath = child(rpath, "reasoningText");
    parts.think(child(tpath, "text"), text(reasoningText, "text", tpath));
    parts.dropIf(Boolean(optText(reasoningText, "signature", tpath)), child(tpath, "signature"));
  } else if (has(reasoning, "redactedContent")) {
    parts.notKept.push(child(rpath, "redactedContent"));
  } else {
    fail(ReplyCode.MISSING, child(rpath, "reasoningText"), "absent, and no redactedContent");
  }
}

function bedrockBlock(block, path, parts) {
  if (has(block, "text")) parts.text(child(path, "text"), text(block, "text", path));
  else if (has(block, "toolUse")) {
    const use = obj(block, "toolUse", path);
    const upath = child(path, "toolUse");
    const args = argumentsObject(use.input ?? null, child(upath, "input"));
    parts.call(name(use, "toolUseId", upath), name(use, "name", upath), args);
  } else if (has(block, "reasoningContent")) bedrockReasoning(block, path, parts);
  else {
    const other = firstKey(block);
    if (other === null) fail(ReplyCode.MISSING, path, "an empty content block");
    unsupported(child(path, other), `a ${JSON.stringify(other)} block`);
  }
}

function readBedrock(body, parts) {
  if (!has(body, "output") && typeof body.message === "string") {
    fail(ReplyCode.ERROR_BODY, "message", `the provider answered an error: ${body.message}`);
  }
  const output = obj(body, "output", "");
  const message = obj(output, "message", "output");
  const blocks = array(message, "content", "output.message");
  blocks.forEach((_, i) =>
    bedrockBlock(item(blocks, i, "output.message.content"), index("output.message.content", i), parts),
  );
  const reason = optText(body, "stopReason", "") ?? "";
  const u = optObj(body, "usage", "");
  let usage;
  if (u !== null) {
    const fresh = count(u, "inputTokens", "usage");
    const read = count(u, "cacheReadInputTokens", "usage");
    const write = count(u, "cacheWriteInputTokens", "usage");
    usage = newUsage("usage", [fresh, read, write], read, write, [count(u, "outputTokens", "usage")], undefined);
  }
  return { reason, stop: stopOf(BEDROCK_STOPS, reason), usage };
}

const READERS = new Map([
  [Provider.ANTHROPIC_MESSAGES, readAnthropic],
  [Provider.OPENAI_CHAT_COMPLETIONS, readOpenAIChat],
  [Provider.OPENAI_RESPONSES, readOpenAIResponses],
  [Provider.GEMINI_GENERATE_CONTENT, readGemini],
  [Provider.AMAZON_BEDROCK_CONVERSE, readBedrock],
]);

const hasText = (s) => s.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, "") !== "";

function assemble(parts, read, entryId, turnId) {
  let content = parts.texts.map(([, v]) => v).join("");
  const refusal = parts.refusals.join("");
  const notKept = [...parts.notKept];
  if (!hasText(content)) {
    notKept.push(...parts.texts.map(([p]) => p));
    content = refusal;
  }
  let stop = read.stop;
  if (refusal) stop = Stop.REFUSAL;
  else if (stop === Stop.END_TURN && parts.calls.length > 0) stop = Stop.TOOL_USE;
  const entries = [];
  if (hasText(content) || parts.calls.length > 0) {
    const entry = create(ConversationEntrySchema, {
      entryId,
      turnId,
      role: EntryRole.ASSISTANT,
      content,
      toolCalls: parts.calls,
    });
    if (parts.reasoning.length > 0) entry.reasoningContent = parts.reasoning.map(([, v]) => v).join("\n\n");
    entries.push(entry);
  } else {
    notKept.push(...parts.reasoning.map(([p]) => p));
  }
  return { entries, usage: read.usage, stop, providerStopReason: read.reason, refusal, notKept };
}

/**
 * The entries to append for one provider response, its usage and why the model stopped.
 *
 * `provider` is the Provider the body was rendered for; `response` the provider's JSON response
 * (text, UTF-8 bytes, or parsed). The assistant entry's id is `${turnId}.r${round}`: the same reply
 * appended again is an idempotent repeat. Throws a ReplyError with `code` and `path`.
 */
export function entriesOfResponse(provider, response, turnId, round) {
  const read = READERS.get(provider);
  if (read === undefined) {
    fail(ReplyCode.INVALID_ARGUMENT, "", `provider ${provider} is none of the five response shapes`);
  }
  if (typeof turnId !== "string" || turnId === "") {
    fail(ReplyCode.INVALID_ARGUMENT, "", "turnId is empty: entry ids are made from it");
  }
  if (!Number.isInteger(round) || round < 0) {
    fail(ReplyCode.INVALID_ARGUMENT, "", `round ${round} is not a whole number >= 0`);
  }
  const body = parseResponse(response);
  if (body.error !== null && body.error !== undefined) {
    const message = typeof body.error?.message === "string" ? `: ${body.error.message}` : "";
    fail(ReplyCode.ERROR_BODY, "error", `the provider answered an error${message}`);
  }
  const parts = new Parts();
  return assemble(parts, read(body, parts), `${turnId}.r${round}`, turnId);
}
