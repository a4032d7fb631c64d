import { iso } from "../../lib/time";
import type { Runtime } from "../runtime";
import { int, print, required, table, UsageError, type Values } from "../args";
import { describeRecipients, parseDailyCap, parseExpiry, parseRecipients, parseScopes } from "../../core/scopes";
import { keyView, limitsOf, type KeyOptions } from "../../modules/accounts/service";

/** The limits the command line gives (--scopes, --recipients, --daily-cap, --expires); absent flags leave them. */
function keyOptions(values: Values, now: number): KeyOptions {
  const options: KeyOptions = {};
  if (values.scopes !== undefined)
    options.scopes = ["all", "*"].includes(values.scopes.trim()) ? null : parseScopes(values.scopes, "--scopes");
  if (values.recipients !== undefined) options.recipients = parseRecipients(values.recipients, "--recipients");
  if (values["daily-cap"] !== undefined) options.dailyCap = parseDailyCap(values["daily-cap"], "--daily-cap");
  if (values.expires !== undefined) options.expiresAt = parseExpiry(values.expires, now, "--expires");
  if (values["needs-approval"] === true) options.needsApproval = true;
  return options;
}

/** A key's limits in a line of text. */
function limitsText(k: { scopes: string[] | null; recipients: string; daily_cap: number | null; expires_at: string | null }): string {
  return [
    `Scopes:     ${k.scopes === null ? "all" : k.scopes.join(",")}`,
    `Recipients: ${k.recipients}`,
    `Daily cap:  ${k.daily_cap ?? "none"}`,
    `Expires:    ${k.expires_at ?? "never"}`,
  ].join("\n");
}

export async function keys(rt: Runtime, sub: string | undefined, args: string[], values: Values): Promise<void> {
  const { accounts } = rt.services;
  const ref = () => required(values.key ?? args[0], "KEY (the API key or its id)");
  switch (sub) {
    case "create": {
      const created = await accounts.createKey(
        required(values.name, "--name"),
        values.workspace ? int(values.workspace, "--workspace") : undefined,
        keyOptions(values, Date.now()),
      );
      print(
        values,
        created,
        `API key:    ${created.api_key}\nAPI secret: ${created.api_secret}\nWorkspace:  ${created.workspace_id}\n${limitsText(created)}\n${created.needs_approval ? "Its sends wait for approval (pigeon keys approval KEY off to stop).\n" : ""}Store the secret now: it is shown only once.`,
      );
      return;
    }
    case "update": {
      const options = keyOptions(values, Date.now());
      if (values.name !== undefined) options.name = required(values.name.trim() || undefined, "--name");
      if (Object.keys(options).length === 0)
        throw new UsageError("keys update KEY needs --name, --scopes, --recipients, --daily-cap or --expires");
      const view = keyView(await accounts.updateKey(ref(), options));
      print(values, view, `Key ${view.api_key} ("${view.name}") updated\n${limitsText(view)}`);
      return;
    }
    case "list": {
      const rows = (await accounts.listKeys(values.workspace ? int(values.workspace, "--workspace") : undefined)).map((k) => ({
        id: k.id,
        name: k.name,
        key: k.key,
        workspace_id: k.workspaceId,
        status: k.status,
        scopes: limitsOf(k).scopes?.join(",") ?? "all",
        recipients: describeRecipients(limitsOf(k).recipients),
        daily_cap: k.dailyCap,
        expires_at: iso(k.expiresAt),
        needs_approval: k.needsApproval,
        secret: `…${k.secretHint}`,
        created_at: iso(k.createdAt),
        last_used_at: iso(k.lastUsedAt),
      }));
      print(values, rows, table(rows));
      return;
    }
    case "rotate": {
      const rotated = await accounts.rotateKey(ref());
      print(values, rotated, `API key:    ${rotated.api_key}\nAPI secret: ${rotated.api_secret}\nThe old secret no longer works.`);
      return;
    }
    case "disable":
    case "enable": {
      const row = await accounts.setKeyStatus(ref(), sub === "disable" ? "disabled" : "active");
      print(values, { key_id: row.id, api_key: row.key, status: row.status }, `Key ${row.key} is now ${row.status}`);
      return;
    }
    case "approval": {
      const [keyRef, setting] = values.key ? [values.key, args[0]] : [args[0], args[1]];
      if (setting !== "on" && setting !== "off") throw new UsageError("keys approval takes KEY on|off");
      const row = await accounts.setKeyApproval(required(keyRef, "KEY (the API key or its id)"), setting === "on");
      print(
        values,
        { key_id: row.id, api_key: row.key, needs_approval: row.needsApproval },
        row.needsApproval ? `Sends by key ${row.key} now wait for approval` : `Sends by key ${row.key} no longer wait for approval`,
      );
      return;
    }
  }
  throw new UsageError("keys takes create, update, list, rotate, disable, enable or approval");
}

/** The password from --password, else the first line of standard input (so it stays out of the shell history). */
export async function passwordFrom(values: Values): Promise<string> {
  if (values.password !== undefined) return values.password;
  const input = await new Response(Bun.stdin.stream()).text();
  const line = input.split(/\r?\n/)[0] ?? "";
  if (!line) throw new UsageError("--password is required (or give it on standard input)");
  return line;
}

export async function usersCmd(rt: Runtime, sub: string | undefined, values: Values) {
  const { users } = rt.services;
  switch (sub) {
    case "create": {
      const role = values.role ?? "owner";
      if (role !== "owner" && role !== "member") throw new UsageError("--role is owner or member");
      const user = await users.createUser({
        email: required(values.email, "--email"),
        password: await passwordFrom(values),
        accountId: values.account ? int(values.account, "--account") : undefined,
        role,
      });
      print(values, user, `User ${user.email} (${user.role} of account ${user.account_id}) created; sign in at /dashboard`);
      return;
    }
    case "set-password": {
      const user = await users.setPassword(required(values.email, "--email"), await passwordFrom(values));
      print(values, user, `Password of ${user.email} changed; its sessions were signed out`);
      return;
    }
    case "list": {
      const rows = await users.listUsers(values.account ? int(values.account, "--account") : undefined);
      print(values, rows, table(rows as unknown as Record<string, unknown>[]));
      return;
    }
    case "reset-2fa": {
      const done = await users.twoFactor.reset(required(values.email, "--email"));
      print(
        values,
        { email: done.email, two_factor_removed: done.hadTwoFactor },
        done.hadTwoFactor
          ? `Two-factor sign-in of ${done.email} removed, with its recovery codes; the password alone signs in until it is set up again`
          : `${done.email} had no two-factor sign-in; nothing to remove`,
      );
      return;
    }
  }
  throw new UsageError("users takes create, set-password, list or reset-2fa");
}

export async function workspaces(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { accounts } = rt.services;
  if (sub === "create") {
    const ws = await accounts.createWorkspace(
      required(values.name, "--name"),
      values.account ? int(values.account, "--account") : undefined,
    );
    const out = { workspace_id: ws.id, project_id: ws.id, name: ws.name, account_id: ws.accountId, created_at: iso(ws.createdAt) };
    print(values, out, `Workspace ${ws.id} "${ws.name}" created. Give it a key: pigeon keys create --name NAME --workspace ${ws.id}`);
    return;
  }
  if (sub === "list") {
    const rows = (await accounts.listWorkspaces(values.account ? int(values.account, "--account") : undefined)).map((w) => ({
      workspace_id: w.id,
      name: w.name,
      account_id: w.accountId,
      credit_balance: w.creditBalance,
      created_at: iso(w.createdAt),
    }));
    print(values, rows, table(rows));
    return;
  }
  throw new UsageError("workspaces takes create or list");
}

export async function accountsCmd(rt: Runtime, sub: string | undefined, args: string[], values: Values): Promise<void> {
  const { accounts } = rt.services;
  const id = () => int(values.account ?? args[0], "ID");
  const show = (a: { id: number; name: string; status: string }) =>
    print(values, { account_id: a.id, name: a.name, status: a.status }, `Account ${a.id} "${a.name}" is ${a.status}`);
  switch (sub) {
    case "create": {
      const { account, workspace } = await accounts.createAccount(required(values.name, "--name"), values.plan ?? "free");
      print(
        values,
        { account_id: account.id, name: account.name, workspace_id: workspace.id, status: account.status },
        `Account ${account.id} "${account.name}" created with workspace ${workspace.id}. Give it a key: pigeon keys create --name NAME --workspace ${workspace.id}`,
      );
      return;
    }
    case "list": {
      const rows = (await accounts.listAccounts()).map((a) => ({
        account_id: a.id,
        name: a.name,
        status: a.status,
        owner: a.isOwner,
        plan: a.plan,
        sms_length_cap: a.smsLengthCap,
        created_at: iso(a.createdAt),
      }));
      print(values, rows, table(rows));
      return;
    }
    case "suspend":
      return show(await accounts.setAccountStatus(id(), "suspended"));
    case "resume":
      return show(await accounts.setAccountStatus(id(), "active"));
    case "set-plan": {
      const a = await accounts.setAccountPlan(id(), required(values.plan, "--plan"));
      print(values, { account_id: a.id, plan: values.plan }, `Account ${a.id} is now on plan ${values.plan}`);
      return;
    }
    case "set-cap": {
      const a = await accounts.setSmsLengthCap(id(), int(values.chars, "--chars"));
      print(values, { account_id: a.id, sms_length_cap: a.smsLengthCap }, `Account ${a.id} SMS length cap: ${a.smsLengthCap}`);
      return;
    }
  }
  throw new UsageError("accounts takes create, list, suspend, resume, set-plan or set-cap");
}

export async function plans(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { accounts } = rt.services;
  const present = (p: Awaited<ReturnType<typeof accounts.listPlans>>[number]) => ({
    code: p.code,
    name: p.name,
    requests_per_minute: p.requestsPerMinute,
    requests_per_day: p.requestsPerDay,
    monthly_sms: p.monthlySmsLimit ?? "unlimited",
    urls_allowed: p.allowUrls,
  });
  if (sub === "list") {
    const rows = (await accounts.listPlans()).map(present);
    print(values, rows, table(rows));
    return;
  }
  if (sub === "set") {
    const monthly = values["monthly-sms"];
    if (values.urls !== undefined && values.urls !== "yes" && values.urls !== "no") throw new UsageError("--urls takes yes or no");
    const row = await accounts.upsertPlan({
      code: required(values.code, "--code"),
      name: values.name ?? required(values.code, "--code"),
      monthlySmsLimit: monthly === undefined || monthly === "unlimited" ? null : int(monthly, "--monthly-sms", 0),
      requestsPerMinute: values["per-minute"] ? int(values["per-minute"], "--per-minute") : undefined,
      requestsPerDay: values["per-day"] ? int(values["per-day"], "--per-day") : undefined,
      allowUrls: values.urls === undefined ? undefined : values.urls === "yes",
    });
    print(values, present(row), `Plan ${row.code} saved`);
    return;
  }
  throw new UsageError("plans takes list or set");
}

export async function credits(rt: Runtime, sub: string | undefined, values: Values): Promise<void> {
  const { credits: ledger, accounts } = rt.services;
  const workspaceId = int(values.workspace, "--workspace");
  await accounts.getWorkspace(workspaceId);
  if (sub === "add") {
    const raw = required(values.amount, "--amount");
    if (!/^-?\d+$/.test(raw) || Number(raw) === 0) throw new UsageError("--amount needs a non-zero whole number");
    const balance = await ledger.topUp(workspaceId, Number(raw), values.note ?? null);
    print(values, { workspace_id: workspaceId, balance }, `Workspace ${workspaceId} balance: ${balance} credits`);
    return;
  }
  if (sub === "show") {
    const out = {
      workspace_id: workspaceId,
      balance: await ledger.balance(workspaceId),
      used_this_month: await ledger.usedThisMonth(workspaceId),
    };
    print(values, out, `Workspace ${workspaceId}: ${out.balance} credits, ${out.used_this_month} used this month`);
    return;
  }
  throw new UsageError("credits takes add or show");
}
