// SMPP across two servers sharing one PostgreSQL database (two sets of services, each with its own
// listener): an ESME bound to A gets the receipt of a message whose delivery B learned of, and the
// SMS a phone reported to B; failed binds on A throttle binds on B, since the limits are the
// cluster's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NetworkListener } from "../../src/modules/descriptor";
import { listen } from "../../src/modules/smpp";
import { STATUS } from "../../src/modules/smpp/pdu";
import { createTestContext, type TestContext } from "../helpers/context";
import { appPhone } from "../helpers/phone";
import { postgresBin } from "../helpers/postgres";
import { bindEsme } from "../helpers/smpp-client";
import { tempDirsToRemove } from "../helpers/temp-dirs";

const portOf = (l: NetworkListener) => Number(/:(\d+)/.exec(l.describe())?.[1]);

describe.skipIf(!postgresBin())("SMPP on two servers sharing PostgreSQL", () => {
  let a: TestContext;
  let b: TestContext;
  let onA: NetworkListener;
  let onB: NetworkListener;
  let creds: { systemId: string; password: string };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-smpp-replicas-"));
    tempDirsToRemove.push(dir);
    const keyFile = join(dir, "pigeon.key");
    const config = { keyFile, host: "127.0.0.1", smpp: { port: 0, tlsPort: null } };
    a = await createTestContext({ backend: "postgres", config });
    b = await createTestContext({ databaseUrl: a.databaseUrl!, config });
    await a.services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 100_000, requestsPerDay: 1_000_000 });
    const issued = await a.services.smpp.credentials.issue(a.workspace.id);
    creds = { systemId: issued.systemId, password: issued.password! };
    onA = (await listen(a.services, a.app, { failedBindDelayMs: 5 }))!;
    onB = (await listen(b.services, b.app, { failedBindDelayMs: 5 }))!;
  });
  afterAll(async () => {
    await onA?.stop(0);
    await onB?.stop(0);
    a?.services.closeChannels();
    b?.services.closeChannels();
  });

  test("a receipt and a received SMS learned by B reach the ESME bound to A", async () => {
    const phone = await appPhone(b);
    const { esme } = await bindEsme(portOf(onA), creds);
    const resp = await esme.call("submit_sm", {
      destination_addr: "14155552671",
      dest_addr_ton: 1,
      short_message: "Order 7 ready",
      registered_delivery: 1,
    });
    expect(resp.command_status).toBe(0);
    const id = Number(resp.message_id);
    await b.services.state.transition(id, "sent");
    await b.services.state.transition(id, "delivered");
    const [receipt] = await esme.waitDelivered(1);
    expect(receipt.receipted_message_id).toBe(String(id));
    expect(receipt.short_message.message).toContain("stat:DELIVRD");

    await phone.receive("+14155550199", "Is it open today?");
    const [, incoming] = await esme.waitDelivered(2);
    expect(incoming.short_message.message).toBe("Is it open today?");
    expect(incoming.source_addr).toBe("14155550199");
    // Each went once, to one bind.
    await Bun.sleep(1200);
    expect(esme.delivered).toHaveLength(2);
    esme.close();
  });

  test("failed binds on A count on B: the throttle is the cluster's", async () => {
    for (let i = 0; i < 20; i++) {
      const wrong = await bindEsme(portOf(onA), { systemId: creds.systemId, password: `nope${i}xx`.slice(0, 8) });
      expect(wrong.resp.command_status).toBe(STATUS.ESME_RINVPASWD);
      wrong.esme.close();
    }
    const onOther = await bindEsme(portOf(onB), creds);
    expect(onOther.resp.command_status).toBe(STATUS.ESME_RBINDFAIL);
    onOther.esme.close();
  });
});
