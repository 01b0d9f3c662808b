// Types of replies.js: a provider's response as the entries to append, its usage and why the model stopped.
import type { ConversationEntry } from "./gen/pioneer/v1/history_pb.js";
import type { Provider } from "./gen/pioneer/v1/provider_service_pb.js";
import type { ProviderUsage } from "./gen/pioneer/v1/usage_pb.js";

/** ReplyError codes, the same in every client. */
export declare const ReplyCode: {
  /** The caller's: an unknown provider, an empty turn id, a negative round. */
  readonly INVALID_ARGUMENT: "invalid_argument";
  /** The response is not JSON text, or not a JSON object. */
  readonly NOT_JSON: "not_json";
  /** The provider's error body, or a response that failed. */
  readonly ERROR_BODY: "error_body";
  /** A field the reply needs is absent or null. */
  readonly MISSING: "missing";
  /** A field of another type than the API documents. */
  readonly WRONG_TYPE: "wrong_type";
  /** A content kind or state that no entry can hold. */
  readonly UNSUPPORTED: "unsupported";
  /** Tool call arguments that are not a JSON object. */
  readonly BAD_ARGUMENTS: "bad_arguments";
};
export type ReplyCodeValue = (typeof ReplyCode)[keyof typeof ReplyCode];

/** What stopped the model, in one vocabulary for every provider. */
export declare const Stop: {
  readonly END_TURN: "end_turn";
  /** The model made tool calls and stopped to have them run. */
  readonly TOOL_USE: "tool_use";
  readonly MAX_TOKENS: "max_tokens";
  readonly STOP_SEQUENCE: "stop_sequence";
  /** Anthropic paused a long turn (server tools). */
  readonly PAUSE_TURN: "pause_turn";
  readonly REFUSAL: "refusal";
  /** A provider's filter or guardrail stopped or replaced the output. */
  readonly CONTENT_FILTER: "content_filter";
  readonly CONTEXT_WINDOW_EXCEEDED: "context_window_exceeded";
  /** A reason of the provider's not named here (see providerStopReason). */
  readonly OTHER: "other";
};
export type StopValue = (typeof Stop)[keyof typeof Stop];

/** A response that cannot be turned into entries: its code and the path in the response it names. */
export declare class ReplyError extends Error {
  constructor(code: ReplyCodeValue, path: string, message: string);
  readonly code: ReplyCodeValue;
  /** e.g. "choices[0].message.tool_calls[1].function.arguments"; "" for the whole response. */
  readonly path: string;
}

/** What one provider response holds for the thread. */
export interface ProviderReply {
  /** The assistant entry, or none when the reply holds no text and no tool call. */
  entries: ConversationEntry[];
  /** The usage the provider reported, in ProviderUsage's meaning; undefined when none. */
  usage: ProviderUsage | undefined;
  /** Why the model stopped. */
  stop: StopValue;
  /** The provider's own reason as it sent it. */
  providerStopReason: string;
  /** The refusal text OpenAI returns apart from the content ("" otherwise). */
  refusal: string;
  /** Paths in the response of what the entry cannot hold, in the order read. */
  notKept: string[];
}

/** A provider's JSON response: text, UTF-8 bytes, or parsed. */
export type ProviderResponse = string | Uint8Array | Record<string, unknown>;

/**
 * The entries to append for one provider response, its usage and why the model stopped. The
 * assistant entry's id is `${turnId}.r${round}`. Throws a ReplyError.
 */
export declare function entriesOfResponse(
  provider: Provider,
  response: ProviderResponse,
  turnId: string,
  round: number,
): ProviderReply;

/** A JSON value as every pioneer-grpc client writes it (RFC 8785's form). */
export declare function canonicalJson(value: unknown, path?: string): string;
