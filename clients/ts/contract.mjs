// Calls the contract over HTTP/JSON with Connect's own client and prints what it got, as JSON.
//
//   PIONEER_HTTP=http://127.0.0.1:8080 [PIONEER_TOKEN=...] node contract.mjs requests.json
//
// requests.json: {"compilePrompt": <CompilePromptRequest JSON>, "prepareTurn": <PrepareTurnRequest JSON>,
// "watch": {"request": <WatchManifestsRequest JSON>, "events": N}}. Prints {"compilePrompt": ...,
// "prepareTurn": ..., "events": [...]}: the responses in the protobuf JSON form, the first N events.
import { readFileSync } from "node:fs";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  CompilePromptRequestSchema,
  CompilePromptResponseSchema,
  PromptCompilerService,
} from "./gen/pioneer/v1/prompt_compiler_service_pb.js";
import {
  ManifestEventSchema,
  ManifestService,
  WatchManifestsRequestSchema,
} from "./gen/pioneer/v1/manifest_service_pb.js";
import { PrepareTurnRequestSchema, PrepareTurnResponseSchema, TurnService } from "./gen/pioneer/v1/turn_service_pb.js";

const requests = JSON.parse(readFileSync(process.argv[2], "utf8"));
const token = process.env.PIONEER_TOKEN || "";
const transport = createConnectTransport({
  baseUrl: process.env.PIONEER_HTTP,
  httpVersion: "1.1",
  useBinaryFormat: false,
  interceptors: [
    (next) => async (request) => {
      if (token) request.header.set("authorization", `Bearer ${token}`);
      return next(request);
    },
  ],
});

const compiler = createClient(PromptCompilerService, transport);
const turns = createClient(TurnService, transport);
const manifests = createClient(ManifestService, transport);

const compiled = await compiler.compilePrompt(fromJson(CompilePromptRequestSchema, requests.compilePrompt));
const prepared = await turns.prepareTurn(fromJson(PrepareTurnRequestSchema, requests.prepareTurn));

const events = [];
const controller = new AbortController();
try {
  for await (const message of manifests.watchManifests(fromJson(WatchManifestsRequestSchema, requests.watch.request), {
    signal: controller.signal,
  })) {
    if (message.kind.case !== "event") continue;
    events.push(toJson(ManifestEventSchema, message.kind.value));
    if (events.length >= requests.watch.events) {
      controller.abort();
      break;
    }
  }
} catch (error) {
  if (!controller.signal.aborted) throw error;
}

process.stdout.write(
  JSON.stringify({
    compilePrompt: toJson(CompilePromptResponseSchema, compiled),
    prepareTurn: toJson(PrepareTurnResponseSchema, prepared),
    events,
  }),
);
