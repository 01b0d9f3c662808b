// entriesOfResponse against the vectors every client is tested against: tests/data/replies at the
// repository root (tests/client/test_replies.py says what they hold and proves their shapes with the
// providers' SDKs). Run: node --test replies.test.mjs (after scripts/ts_client.sh); the Python suite
// runs it too (tests/client/test_replies.py).
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { equals, fromJson, toBinary } from "@bufbuild/protobuf";
import { ConversationEntrySchema } from "./gen/pioneer/v1/history_pb.js";
import { Provider } from "./gen/pioneer/v1/provider_service_pb.js";
import { ProviderUsageSchema } from "./gen/pioneer/v1/usage_pb.js";
import * as replies from "./replies.js";
import { ReplyCode, ReplyError, canonicalJson, entriesOfResponse } from "./replies.js";

const dir = new URL("../../tests/data/replies/", import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort();
const providerOf = (name) => Provider[name.replace(/^PROVIDER_/, "")];

test("there are vectors", () => assert.ok(files.length > 0));

test("replies.d.ts declares what replies.js exports", () => {
  const declared = [...readFileSync(new URL("replies.d.ts", import.meta.url), "utf8").matchAll(
    /^export declare (?:const|function|class) (\w+)/gm,
  )].map((m) => m[1]);
  assert.deepEqual(declared.sort(), Object.keys(replies).sort());
});

function checkReply(vector) {
  const run = (response) =>
    entriesOfResponse(providerOf(vector.provider), response, vector.turn_id, vector.round);
  if (vector.error) {
    assert.throws(
      () => run(JSON.stringify(vector.response)),
      (error) => {
        assert.ok(error instanceof ReplyError, String(error));
        assert.deepEqual([error.code, error.path], [vector.error.code, vector.error.path], error.message);
        return true;
      },
    );
    return;
  }
  const reply = run(JSON.stringify(vector.response));
  const expect = vector.expect;
  const wanted = expect.entries.map((e) => fromJson(ConversationEntrySchema, e));
  assert.equal(reply.entries.length, wanted.length);
  reply.entries.forEach((entry, i) => {
    assert.ok(equals(ConversationEntrySchema, entry, wanted[i]), `entry ${i}`);
    assert.deepEqual(toBinary(ConversationEntrySchema, entry), toBinary(ConversationEntrySchema, wanted[i]));
  });
  if (expect.usage === null) assert.equal(reply.usage, undefined);
  else {
    const usage = fromJson(ProviderUsageSchema, expect.usage);
    assert.deepEqual(toBinary(ProviderUsageSchema, reply.usage), toBinary(ProviderUsageSchema, usage));
  }
  assert.deepEqual(
    [reply.stop, reply.providerStopReason, reply.refusal, reply.notKept],
    [expect.stop, expect.provider_stop_reason, expect.refusal, expect.not_kept],
  );
  // Parsed and text responses give one answer.
  assert.deepEqual(run(vector.response), reply);
}

for (const file of files) {
  test(`the reply to ${file} is what it expects`, () => {
    checkReply(JSON.parse(readFileSync(new URL(file, dir), "utf8")));
  });
}

// The vectors' responses changed many ways, and what the Python client made of each
// (scripts/reply_mutations.py): every client must answer the same.
test("entriesOfResponse answers as Python does to every mutation", async (t) => {
  const lines = readFileSync(new URL("mutations.jsonl", dir), "utf8").trim().split("\n");
  assert.ok(lines.length >= 100, `only ${lines.length} mutations`);
  for (const line of lines) {
    const vector = JSON.parse(line);
    await t.test(vector.name, () => checkReply(vector));
  }
});

test("the caller's mistakes are invalid_argument; text that is no JSON object is not_json", () => {
  for (const [provider, turn, round] of [
    [0, "t", 1],
    [99, "t", 1],
    [Provider.ANTHROPIC_MESSAGES, "", 1],
    [Provider.ANTHROPIC_MESSAGES, "t", -1],
    [Provider.ANTHROPIC_MESSAGES, "t", 1.5],
  ]) {
    assert.throws(() => entriesOfResponse(provider, "{}", turn, round), { code: ReplyCode.INVALID_ARGUMENT });
  }
  for (const text of ["", "not json", "[1, 2]", '{"a": NaN}', "null"]) {
    assert.throws(() => entriesOfResponse(Provider.OPENAI_RESPONSES, text, "t", 1), {
      code: ReplyCode.NOT_JSON,
      path: "",
    });
  }
});

test("canonicalJson writes as the other clients do", () => {
  const cases = [
    ["1.0", "1"],
    ["-0.0", "0"],
    ["1e21", "1e+21"],
    ["0.000001", "0.000001"],
    ["123456789012345678901234", "1.2345678901234569e+23"],
    ['{"b": 1, "a": [true, null, "x\\n\\u0001é\\u2028"]}', '{"a":[true,null,"x\\n\\u0001é\u2028"],"b":1}'],
    ['{"\\ue000": 1, "\\ud83d\\ude00": 2, "Z": 3}', '{"Z":3,"\u{1f600}":2,"\ue000":1}'],
  ];
  for (const [input, written] of cases) assert.equal(canonicalJson(JSON.parse(input)), written, input);
});
