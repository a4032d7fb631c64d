// The companion app's settings import, transcribed line by line from its Kotlin source
// (capcom6/android-sms-gateway, tag v1.68.0, app/src/main/java/me/capcom/smsgateway/):
//   modules/settings/SettingsService.kt  update(): each section's importer in turn; an
//       IllegalArgumentException becomes "Failed to import <section>" and stops the update
//   modules/messages/MessagesSettings.kt  import() and the getters' defaults; the Period enum of
//       v1.66.x lacks Per30Minutes (added by commit 11580ad, first released in v1.67.0)
//   modules/webhooks/WebhooksSettings.kt, modules/ping/PingSettings.kt, modules/logs/LogsSettings.kt,
//   modules/gateway/GatewaySettings.kt  their import() and getters
// It is a judge for the tests: Pigeon's own code is not used here. The storage is the app's
// key-value store (values kept as the importers store them); the getters apply the defaults.

type Stored = Map<string, unknown>;

/** Kotlin's value?.toString()?.toFloat()?.toInt(): NumberFormatException on a non-number. */
function toInt(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const s = String(value).trim();
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?$/.test(s)) throw new Error(`NumberFormatException: For input string: "${s}"`);
  const f = Math.fround(Number.parseFloat(s));
  return Math.max(-2147483648, Math.min(2147483647, Math.trunc(f)));
}

/** Kotlin's Enum.valueOf: IllegalArgumentException for a name it does not have. */
function enumValueOf(names: readonly string[], value: unknown, enumName: string): string {
  const name = String(value);
  if (!names.includes(name)) throw new Error(`No enum constant ${enumName}.${name}`);
  return name;
}

const PERIODS_1_68 = ["Disabled", "PerMinute", "Per30Minutes", "PerHour", "PerDay"];
const PERIODS_1_66 = ["Disabled", "PerMinute", "PerHour", "PerDay"];

/** A phone's settings store and what its getters answer, for app 1.68.0 or (old: true) 1.66.x. */
export class AppSettingsStore {
  readonly messages: Stored = new Map();
  readonly webhooks: Stored = new Map();
  readonly ping: Stored = new Map();
  readonly logs: Stored = new Map();
  readonly gateway: Stored = new Map();
  private readonly periods: string[];

  constructor(opts: { old?: boolean } = {}) {
    this.periods = opts.old ? PERIODS_1_66 : PERIODS_1_68;
    // LogsSettings.migrate() on first start: lifetime_days = "30".
    this.logs.set("lifetime_days", "30");
  }

  /** SettingsService.update(data). Throws "Failed to import <section>: …" as the app does. */
  update(data: Record<string, unknown>): boolean {
    let changed = false;
    for (const [section, value] of Object.entries(data)) {
      const importer = this.importers[section];
      if (!importer) continue;
      try {
        if (importer(value as Record<string, unknown>)) changed = true;
      } catch (e) {
        throw new Error(`Failed to import ${section}: ${(e as Error).message}`);
      }
    }
    return changed;
  }

  private readonly importers: Record<string, (data: Record<string, unknown>) => boolean> = {
    messages: (data) => {
      let changed = false;
      for (const [key, value] of Object.entries(data)) {
        switch (key) {
          case "send_interval_min":
          case "send_interval_max": {
            const v = toInt(value);
            changed ||= this.messages.get(key) !== v;
            this.messages.set(key, v);
            break;
          }
          case "limit_period": {
            const v = value === null || value === undefined ? "Disabled" : enumValueOf(this.periods, value, "Period");
            changed ||= this.limitPeriod !== v;
            this.messages.set(key, v);
            break;
          }
          case "limit_value": {
            const v = toInt(value);
            if (v !== null && v < 0) throw new Error("Limit value must be >= 0");
            changed ||= this.limitValue !== (v ?? 0);
            this.messages.set(key, v);
            break;
          }
          case "sim_selection_mode": {
            const v =
              value === null || value === undefined
                ? "OSDefault"
                : enumValueOf(["OSDefault", "RoundRobin", "Random"], value, "SimSelectionMode");
            changed ||= this.simSelectionMode !== v;
            this.messages.set(key, v);
            break;
          }
          case "processing_order": {
            const v = value === null || value === undefined ? "LIFO" : enumValueOf(["LIFO", "FIFO"], value, "ProcessingOrder");
            changed ||= this.processingOrder !== v;
            this.messages.set(key, v);
            break;
          }
          case "log_lifetime_days": {
            const v = toInt(value);
            if (v !== null && v < 1) throw new Error("Log lifetime days must be >= 1");
            changed ||= this.logLifetimeDays !== v;
            this.messages.set(key, v);
            break;
          }
        }
      }
      return changed;
    },
    webhooks: (data) => {
      let changed = false;
      for (const [key, value] of Object.entries(data)) {
        switch (key) {
          case "internet_required": {
            // Kotlin's String.toBoolean(): "true" in any case, anything else false.
            const v = value === null || value === undefined ? null : String(value).toLowerCase() === "true";
            changed ||= this.internetRequired !== (v ?? true);
            this.webhooks.set(key, v);
            break;
          }
          case "retry_count": {
            const v = toInt(value) ?? 15;
            if (v < 1) throw new Error("Retry count must be >= 1");
            changed ||= this.retryCount !== v;
            this.webhooks.set(key, v);
            break;
          }
          case "signing_key": {
            const v = value === null || value === undefined ? null : String(value);
            changed ||= this.webhooks.get(key) !== v;
            this.webhooks.set(key, v);
            break;
          }
        }
      }
      return changed;
    },
    ping: (data) => {
      let changed = false;
      for (const [key, value] of Object.entries(data)) {
        if (key !== "interval_seconds") continue;
        const n = toInt(value);
        const v = n !== null && n > 0 ? n : null;
        changed ||= this.pingIntervalSeconds !== v;
        this.ping.set(key, v);
      }
      return changed;
    },
    logs: (data) => {
      let changed = false;
      for (const [key, value] of Object.entries(data)) {
        if (key !== "lifetime_days") continue;
        const n = toInt(value);
        const v = n !== null && n > 0 ? n : null;
        changed ||= this.logsLifetimeDays !== v;
        this.logs.set(key, v);
      }
      return changed;
    },
    gateway: (data) => {
      let changed = false;
      for (const [key, value] of Object.entries(data)) {
        switch (key) {
          case "cloud_url": {
            const url = value === null || value === undefined ? "https://api.sms-gate.app/mobile/v1" : String(value);
            if (!url.startsWith("https://")) throw new Error("url must start with https://");
            changed ||= this.gateway.get(key) !== url;
            this.gateway.set(key, url);
            break;
          }
          case "private_token": {
            const v = value === null || value === undefined ? null : String(value);
            changed ||= this.gateway.get(key) !== v;
            this.gateway.set(key, v);
            break;
          }
          case "notification_channel": {
            const v = value === null || value === undefined ? "AUTO" : enumValueOf(["AUTO", "SSE_ONLY"], value, "NotificationChannel");
            changed ||= this.notificationChannel !== v;
            this.gateway.set(key, v);
            break;
          }
        }
      }
      return changed;
    },
  };

  // The getters, with the app's defaults.
  get sendIntervalMin(): number {
    return (this.messages.get("send_interval_min") as number | null | undefined) ?? 0;
  }
  get sendIntervalMax(): number | null {
    return (this.messages.get("send_interval_max") as number | null | undefined) ?? null;
  }
  get limitPeriod(): string {
    return (this.messages.get("limit_period") as string | undefined) ?? "Disabled";
  }
  get limitValue(): number {
    return (this.messages.get("limit_value") as number | null | undefined) ?? 0;
  }
  /** MessagesSettings.limitEnabled. */
  get limitEnabled(): boolean {
    return this.limitValue > 0 && this.limitPeriod !== "Disabled";
  }
  get simSelectionMode(): string {
    return (this.messages.get("sim_selection_mode") as string | undefined) ?? "OSDefault";
  }
  get processingOrder(): string {
    return (this.messages.get("processing_order") as string | undefined) ?? "LIFO";
  }
  get logLifetimeDays(): number | null {
    const v = this.messages.get("log_lifetime_days") as number | null | undefined;
    return v !== null && v !== undefined && v > 0 ? v : null;
  }
  get internetRequired(): boolean {
    return (this.webhooks.get("internet_required") as boolean | null | undefined) ?? true;
  }
  get retryCount(): number {
    return (this.webhooks.get("retry_count") as number | null | undefined) ?? 15;
  }
  get pingIntervalSeconds(): number | null {
    const v = this.ping.get("interval_seconds") as number | null | undefined;
    return v !== null && v !== undefined && v > 0 ? v : null;
  }
  get logsLifetimeDays(): number | null {
    const v = this.logs.get("lifetime_days") as number | string | null | undefined;
    const n = v === null || v === undefined ? null : Number(v);
    return n !== null && n > 0 ? n : null;
  }
  get notificationChannel(): string {
    return (this.gateway.get("notification_channel") as string | undefined) ?? "AUTO";
  }

  /** Everything the getters answer, for comparing a phone's settings as a whole. */
  snapshot() {
    return {
      sendIntervalMin: this.sendIntervalMin,
      sendIntervalMax: this.sendIntervalMax,
      limitPeriod: this.limitPeriod,
      limitValue: this.limitValue,
      simSelectionMode: this.simSelectionMode,
      processingOrder: this.processingOrder,
      logLifetimeDays: this.logLifetimeDays,
      internetRequired: this.internetRequired,
      retryCount: this.retryCount,
      pingIntervalSeconds: this.pingIntervalSeconds,
      logsLifetimeDays: this.logsLifetimeDays,
      notificationChannel: this.notificationChannel,
    };
  }
}
