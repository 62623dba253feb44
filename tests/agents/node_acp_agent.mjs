#!/usr/bin/env node
// An ACP agent written in Node with the official TypeScript SDK (@agentclientprotocol/sdk, 2.x API).
//
// Per prompt it thinks, reports a tool call over its lifecycle, asks permission
// to write answer.txt and writes it through the client when allowed, runs
// `cat notes.txt` in a client terminal, publishes a plan, and answers in chunks
// of one message (same messageId), reporting usage. A prompt containing "slow"
// waits until the client cancels it.

import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";
import { randomUUID } from "node:crypto";
import path from "node:path";

const sessions = new Map();

async function update(client, sessionId, update) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function say(client, sessionId, text, messageId) {
  for (const part of [text.slice(0, 5), text.slice(5)]) {
    await update(client, sessionId, {
      sessionUpdate: "agent_message_chunk",
      messageId,
      content: { type: "text", text: part },
    });
  }
}

acp
  .agent({ name: "node-notes-agent" })
  .onRequest(acp.methods.agent.initialize, async () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "node-notes-agent", version: "0.1.0" },
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const sessionId = randomUUID();
    sessions.set(sessionId, { cwd: params.cwd, cancel: null });
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
    sessions.get(params.sessionId)?.cancel?.();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    const text = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    await update(client, sessionId, {
      sessionUpdate: "agent_thought_chunk",
      content: { type: "text", text: `Node agent thinking about: ${text}` },
    });
    if (text.includes("slow")) {
      await new Promise((resolve) => (session.cancel = resolve));
      return { stopReason: "cancelled" };
    }
    await update(client, sessionId, {
      sessionUpdate: "plan",
      entries: [{ content: "read notes", priority: "high", status: "in_progress" }],
    });
    const target = path.join(session.cwd, "answer.txt");
    await update(client, sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "node-write",
      title: "Write answer.txt",
      kind: "edit",
      status: "pending",
      rawInput: { path: target },
      locations: [{ path: target }],
    });
    const permission = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall: { toolCallId: "node-write", title: "Write answer.txt", kind: "edit" },
      options: [
        { optionId: "go", name: "Allow", kind: "allow_once" },
        { optionId: "stop", name: "Reject", kind: "reject_once" },
      ],
    });
    const allowed = permission.outcome.outcome === "selected" && permission.outcome.optionId === "go";
    if (allowed) {
      await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: target, content: "42\n" });
    }
    await update(client, sessionId, {
      sessionUpdate: "tool_call_update",
      toolCallId: "node-write",
      status: allowed ? "completed" : "failed",
      rawOutput: { allowed },
    });
    const terminal = await client.createTerminal({ sessionId, command: "cat", args: ["notes.txt"], cwd: session.cwd });
    await terminal.waitForExit();
    const { output } = await terminal.currentOutput();
    await terminal.release();
    await update(client, sessionId, {
      sessionUpdate: "plan",
      entries: [{ content: "read notes", priority: "high", status: "completed" }],
    });
    await say(client, sessionId, `Notes say: ${output.trim()}. Answer written: ${allowed}.`, "node-m1");
    return { stopReason: "end_turn", usage: { inputTokens: 7, outputTokens: 9, totalTokens: 16 } };
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
