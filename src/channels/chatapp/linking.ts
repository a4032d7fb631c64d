// Linking business numbers: an access token's business accounts and numbers become chat-app
// devices (created or updated), and a relink gives a number a new token. Both sync templates.
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import { nanoid } from "../../lib/tokens";
import type { DeviceRow } from "../../modules/devices/model";
import { chatappConfigOf, type ChatappConfig } from "./adapter";
import type { ChatappContext } from "./context";
import { classifyPlatformCode } from "./errors";
import { GraphError, GraphUnreachable, type GraphClient } from "./graph";
import type { TemplateSync } from "./templates";

function graphFailure(error: unknown, fallback: "no_business_account" | "no_phone_number"): AppError {
  if (error instanceof GraphError) {
    const info = error.code !== null ? classifyPlatformCode(error.code) : null;
    return new AppError(
      fallback,
      `The platform refused: ${info?.title ?? error.message}${error.details ? ` (${error.details})` : ""}`,
      { platform_message: error.message },
      error.code ?? undefined,
    );
  }
  if (error instanceof GraphUnreachable) return new AppError("service_unavailable", `Cannot reach the chat-app platform: ${error.message}`);
  throw error;
}

export function createLinking(ctx: ChatappContext, sync: TemplateSync) {
  const { clock, graph, devices, storage } = ctx;

  return {
    /** Resolves business accounts and numbers for a token, creates or updates their devices, syncs templates. */
    async connect(workspaceId: number, input: { access_token: string; business_account_id?: string; phone_number_id?: string }) {
      const token = input.access_token.trim();
      let accountIds: string[];
      try {
        accountIds = input.business_account_id ? [input.business_account_id] : await graph.businessAccountsOf(token);
      } catch (error) {
        throw graphFailure(error, "no_business_account");
      }
      if (accountIds.length === 0) {
        throw new AppError(
          "no_business_account",
          "No business account was granted to this access token; restart the connect flow and grant one",
        );
      }
      const accounts: { id: string; name: string | null; numbers: Awaited<ReturnType<GraphClient["phoneNumbers"]>> }[] = [];
      for (const id of accountIds) {
        try {
          const account = await graph.businessAccount(token, id);
          const numbers = (await graph.phoneNumbers(token, id)).filter((n) => !input.phone_number_id || n.id === input.phone_number_id);
          accounts.push({ id, name: account.name ?? null, numbers });
        } catch (error) {
          throw graphFailure(error, "no_business_account");
        }
      }
      if (accounts.every((a) => a.numbers.length === 0)) {
        throw new AppError(
          "no_phone_number",
          input.phone_number_id
            ? `Phone number ${input.phone_number_id} is not on the business account; add it and reconnect`
            : "The business account has no phone number; add a number and reconnect",
          { business_accounts: accounts.map((a) => a.id) },
        );
      }
      const now = clock.now();
      const connected: DeviceRow[] = [];
      const live = await ctx.liveDevices(workspaceId);
      await storage.transaction(async () => {
        for (const account of accounts) {
          for (const number of account.numbers) {
            const config: ChatappConfig = {
              phoneNumberId: number.id,
              businessAccountId: account.id,
              accessToken: token,
              displayPhoneNumber: number.display_phone_number,
              verifiedName: number.verified_name ?? null,
              relinkedAt: now,
            };
            const existing = live.find((d) => chatappConfigOf(d.config)?.phoneNumberId === number.id);
            const name = number.verified_name
              ? `${number.verified_name} (${number.display_phone_number})`
              : `Business number ${number.display_phone_number}`;
            const phone = toE164(`+${number.display_phone_number.replace(/\D/g, "")}`);
            if (existing) {
              connected.push(
                await devices.update(existing.id, { config, name, phoneNumber: phone, status: "active", lastSeenAt: now, updatedAt: now }),
              );
            } else {
              connected.push(
                (
                  await devices.insertMany([
                    {
                      workspaceId,
                      name,
                      kind: "chatapp",
                      status: "active",
                      externalId: nanoid(21),
                      phoneNumber: phone,
                      config,
                      sendLimitPerMinute: 4800,
                      lastSeenAt: now,
                      createdAt: now,
                      updatedAt: now,
                    },
                  ])
                )[0],
              );
            }
          }
        }
      });
      let synced = 0;
      for (const account of accounts) {
        if (account.numbers.length === 0) continue;
        try {
          synced += await sync.syncTemplates(workspaceId, account.id, token);
        } catch (error) {
          ctx.log(`template sync for business account ${account.id} failed`, error);
        }
      }
      return {
        business_accounts: accounts.map((a) => ({ id: a.id, name: a.name, phone_numbers: a.numbers.length })),
        devices: connected,
        templates: synced,
      };
    },

    /** A new access token for a business number; a blocked number may then prove itself with a send. */
    async relink(workspaceId: number, input: { device_id: number; access_token: string }) {
      const device = await devices.get(workspaceId, input.device_id);
      if (device?.kind !== "chatapp") throw new AppError("not_found", `chat-app device ${input.device_id} not found`);
      const config = ctx.configOf(device);
      let numbers: Awaited<ReturnType<typeof graph.phoneNumbers>>;
      try {
        numbers = await graph.phoneNumbers(input.access_token, config.businessAccountId);
      } catch (error) {
        throw graphFailure(error, "no_business_account");
      }
      if (!numbers.some((n) => n.id === config.phoneNumberId)) {
        throw new AppError(
          "no_phone_number",
          `This token does not reach phone number ${config.phoneNumberId} on business account ${config.businessAccountId}`,
        );
      }
      const now = clock.now();
      const updated = await devices.update(device.id, {
        config: { ...config, accessToken: input.access_token, relinkedAt: now },
        updatedAt: now,
      });
      try {
        await sync.syncTemplates(workspaceId, config.businessAccountId, input.access_token);
      } catch (error) {
        ctx.log(`template sync after relinking device ${device.id} failed`, error, { device_id: device.id });
      }
      return updated;
    },
  };
}
