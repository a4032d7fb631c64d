// What the message queue and the webhook poster both work with: the options, the phone's
// lifetime, its protocol client and the settings the server provisioned.
import type { SimulatePhoneOptions } from "./args";
import type { Lifetime } from "./lifetime";
import type { PhoneSettings, ProtocolClient } from "./protocol";

export interface PhoneParts {
  opts: SimulatePhoneOptions;
  life: Lifetime;
  client: ProtocolClient;
  settings: PhoneSettings;
}

export abstract class PhonePart {
  protected readonly opts: SimulatePhoneOptions;
  protected readonly life: Lifetime;
  protected readonly client: ProtocolClient;
  protected readonly settings: PhoneSettings;

  constructor(parts: PhoneParts) {
    this.opts = parts.opts;
    this.life = parts.life;
    this.client = parts.client;
    this.settings = parts.settings;
  }

  protected log(line: string): void {
    this.opts.log(line);
  }
}
