// SMPP credentials per workspace: a system_id (pigeon<workspace id>) and a password of eight
// characters (SMPP's password field holds eight), sealed at rest, shown only when issued, and the
// "SMPP" API key every submit is made with, down the API's send path — so the key's scopes,
// recipients, cap and approval, and the plan's limits, apply to a submit_sm as to any API send.
import { timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { randomBase62 } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import type { CredentialRow, SmppRepository } from "./repository";

/** The name of the key the SMPP listener sends with. */
export const SMPP_KEY_NAME = "SMPP";
/** SMPP's password field: eight characters and its NUL. */
export const PASSWORD_LENGTH = 8;

export interface SmppCredentials {
  workspaceId: number;
  systemId: string;
  /** Only when just issued (made or rotated); null afterwards. */
  password: string | null;
  receivesIncoming: boolean;
  createdAt: number;
  rotatedAt: number;
}

/** A bind's credentials, checked: the workspace, and the API credentials its submits use. */
export interface BoundAccount {
  workspaceId: number;
  systemId: string;
  rotatedAt: number;
  api: { "x-api-key": string; "x-api-secret": string };
}

export interface CredentialDeps {
  repo: SmppRepository;
  clock: Clock;
  secrets: SecretBox;
  accounts: Pick<AccountsService, "createKey" | "keyById" | "setKeyStatus">;
  storage: { transaction<T>(fn: () => Promise<T>): Promise<T> };
}

const sameText = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function createSmppCredentials(deps: CredentialDeps) {
  const { repo, clock, secrets, accounts } = deps;

  const present = (row: CredentialRow, password: string | null): SmppCredentials => ({
    workspaceId: row.workspaceId,
    systemId: row.systemId,
    password,
    receivesIncoming: Boolean(Number(row.incoming)),
    createdAt: Number(row.createdAt),
    rotatedAt: Number(row.rotatedAt),
  });

  /** The workspace's key for submits, made (or enabled again) when missing. */
  async function ensureKey(row: Pick<CredentialRow, "workspaceId" | "keyId" | "keySecret">) {
    if (row.keyId !== null && row.keySecret !== null) {
      const key = await accounts.keyById(row.keyId);
      if (key && key.workspaceId === row.workspaceId) {
        if (key.status !== "active") await accounts.setKeyStatus(String(row.keyId), "active");
        return { keyId: row.keyId, keySecret: row.keySecret };
      }
    }
    const created = await accounts.createKey(SMPP_KEY_NAME, row.workspaceId, { scopes: ["send", "messages:read"] });
    return { keyId: created.key_id, keySecret: secrets.seal(created.api_secret) };
  }

  return {
    /** The workspace's credentials without the password; null when none were issued. */
    async get(workspaceId: number): Promise<SmppCredentials | null> {
      const row = await repo.credential(workspaceId);
      return row ? present(row, null) : null;
    },

    /**
     * Issues the workspace's credentials: on first use, or a new password with `rotate` (binds
     * made with the old one are closed by the listener). The password is in the answer only then.
     */
    issue(workspaceId: number, opts: { rotate?: boolean; incoming?: boolean } = {}): Promise<SmppCredentials> {
      return deps.storage.transaction(async () => {
        const current = await repo.credential(workspaceId);
        if (current && !opts.rotate && opts.incoming === undefined) return present(current, null);
        const now = clock.now();
        const fresh = !current || opts.rotate === true;
        const password = fresh ? randomBase62(PASSWORD_LENGTH) : null;
        const key = await ensureKey(current ?? { workspaceId, keyId: null, keySecret: null });
        const row: CredentialRow = {
          workspaceId,
          systemId: current?.systemId ?? `pigeon${workspaceId}`,
          password: password === null && current ? current.password : secrets.seal(password as string),
          keyId: key.keyId,
          keySecret: key.keySecret,
          incoming: opts.incoming ?? (current ? Boolean(Number(current.incoming)) : true),
          createdAt: current?.createdAt ?? now,
          rotatedAt: fresh ? now : (current?.rotatedAt ?? now),
        };
        await repo.putCredential(row);
        return present(row, password);
      });
    },

    /**
     * A bind's system_id and password, checked: the account, or an AppError — 401
     * `smpp_unknown_system_id` or `smpp_wrong_password` (which the listener answers as
     * ESME_RINVSYSID and ESME_RINVPASWD) — or 403 when the workspace's SMPP key was removed.
     */
    async check(systemId: string, password: string): Promise<BoundAccount> {
      const row = await repo.bySystemId(systemId);
      if (!row) throw new AppError("unauthorized", "Unknown system_id", { smpp: "unknown_system_id" });
      if (!sameText(secrets.open(row.password), password)) throw new AppError("unauthorized", "Wrong password", { smpp: "wrong_password" });
      if (row.keyId === null || row.keySecret === null) throw new AppError("forbidden", "The workspace's SMPP key is missing");
      const key = await accounts.keyById(row.keyId);
      if (!key || key.workspaceId !== row.workspaceId)
        throw new AppError("forbidden", "The workspace's SMPP key was deleted: rotate the credentials");
      return {
        workspaceId: row.workspaceId,
        systemId: row.systemId,
        rotatedAt: Number(row.rotatedAt),
        api: { "x-api-key": key.key, "x-api-secret": secrets.open(row.keySecret) },
      };
    },

    /** When the credentials of `systemId` were last issued (a bind made before it is closed); null when gone. */
    rotatedAt: async (systemId: string) => {
      const row = await repo.bySystemId(systemId);
      return row ? Number(row.rotatedAt) : null;
    },
  };
}

export type SmppCredentialService = ReturnType<typeof createSmppCredentials>;
