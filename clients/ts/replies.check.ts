// Type-checked by tsc (tsconfig.json), never run: replies.d.ts used as an agent loop uses it.
import { Provider } from "./gen/pioneer/v1/provider_service_pb.js";
import type { ProviderUsage } from "./gen/pioneer/v1/usage_pb.js";
import { ReplyCode, ReplyError, Stop, type StopValue, canonicalJson, entriesOfResponse } from "./replies.js";

export function turnOf(body: string, turnId: string, round: number): { ids: string[]; cached: number } {
  try {
    const reply = entriesOfResponse(Provider.ANTHROPIC_MESSAGES, body, turnId, round);
    const stop: StopValue = reply.stop;
    const usage: ProviderUsage | undefined = reply.usage;
    const ids = reply.entries.flatMap((entry) => entry.toolCalls.map((call) => call.id));
    if (stop === Stop.TOOL_USE && ids.length === 0) throw new Error("tool_use without calls");
    return { ids, cached: usage?.cacheReadInputTokens ?? 0 };
  } catch (error) {
    if (error instanceof ReplyError && error.code === ReplyCode.UNSUPPORTED) {
      throw new Error(`${error.path}: ${canonicalJson({ code: error.code })}`);
    }
    throw error;
  }
}
