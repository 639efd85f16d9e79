/**
 * GET_BROKER_EPOCH_CACHE (./epoch-cache.ts) through the in-process broker with fixed roles: a
 * master numbers an epoch per start, beginning where its log ended, and answers its epochs with the
 * last one ending at the log's end; a slave that has not synced answers an empty list.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequest, RequestCode } from "../../remoting/index.ts";
import type { EpochEntryCache } from "../replica-epochs.ts";
import { createTopicRequest, InProcessBroker, sendV2Request } from "../test-support.ts";

const dec = new TextDecoder();
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const epochs = async (b: InProcessBroker) => JSON.parse(dec.decode((await b.ok(createRequest(RequestCode.GET_BROKER_EPOCH_CACHE))).body)) as EpochEntryCache;

test("a master's epochs: one per start, each from where the log ended, the last ending at the log's end", async () => {
  const dir = mkdtempSync(join(tmpdir(), "rocketbun-epochs-"));
  dirs.push(dir);
  const first = InProcessBroker.start({ dir });
  const s = first.controller.info.settings();
  expect(await epochs(first)).toEqual({
    clusterName: s.clusterName,
    brokerName: s.brokerName,
    brokerId: 0,
    epochList: [{ epoch: 1, startOffset: 0, endOffset: 0 }],
    maxOffset: 0,
  });
  await first.ok(createTopicRequest("T", 1));
  for (let i = 0; i < 3; i++) await first.ok(sendV2Request("T", `m${i}`));
  const end = first.controller.info.store().maxPhyOffset;
  expect(end).toBeGreaterThan(0);
  expect(await epochs(first)).toMatchObject({ epochList: [{ epoch: 1, startOffset: 0, endOffset: end }], maxOffset: end });
  await first.stop();

  await using second = InProcessBroker.start({ dir });
  await second.ok(sendV2Request("T", "after restart"));
  const now = second.controller.info.store().maxPhyOffset;
  expect(await epochs(second)).toMatchObject({
    epochList: [
      { epoch: 1, startOffset: 0, endOffset: end },
      { epoch: 2, startOffset: end, endOffset: now },
    ],
    maxOffset: now,
  });
});

test("a slave with nothing replicated answers its identity and no epochs", async () => {
  await using b = InProcessBroker.start({ role: "slave" });
  const s = b.controller.info.settings();
  expect(await epochs(b)).toEqual({ clusterName: s.clusterName, brokerName: s.brokerName, brokerId: s.brokerId, epochList: [], maxOffset: 0 });
});
