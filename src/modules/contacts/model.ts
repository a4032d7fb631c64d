import { t } from "elysia";
import { Envelope, Pagination } from "../../http/envelope";
import { IdParam, pageQuery } from "../../http/validation";

export const Contact = t.Object({
  contact_id: t.Integer(),
  name: t.String(),
  phone: t.String({ description: "E.164" }),
  email: t.Nullable(t.String()),
  type: t.Nullable(t.String({ description: "Code of the contact type, see /api/contact/types" })),
  type_id: t.Nullable(t.Integer()),
  timezone: t.Nullable(
    t.String({
      description: "IANA zone the contact lives in; quiet hours are read in it (else in the number's country's most populous zone)",
    }),
  ),
  tags: t.Array(t.String(), { description: "The contact's labels, lower-cased (an inbound rule's `tag` action adds one)" }),
  opted_out: t.Boolean({
    description: "The number opted out of this workspace's messages (STOP, or POST /api/optout/add); sends to it are refused",
  }),
  opted_out_at: t.Nullable(t.String({ format: "date-time" })),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});

export const ContactType = t.Object({
  type_id: t.Integer(),
  code: t.String(),
  name: t.String(),
  description: t.String(),
});

const Name = t.String({ minLength: 1, maxLength: 200, examples: ["Ada Lovelace"] });
export const Phone = t.String({ minLength: 1, maxLength: 32, description: "E.164, e.g. +14155552671", examples: ["+14155552671"] });
const Email = t.String({ maxLength: 254, description: "A valid email address", examples: ["ada@example.com"] });
const Timezone = t.String({
  maxLength: 64,
  description: "IANA zone name, e.g. Europe/Berlin (400 `invalid_timezone` otherwise); empty clears it",
  examples: ["Europe/Berlin"],
});
const Tag = t.String({
  minLength: 1,
  maxLength: 50,
  description: "Letters, digits, spaces and _ . : -; stored lower-cased",
  examples: ["vip"],
});
export const Tags = t.Array(Tag, { maxItems: 20, description: "At most 20 labels; duplicates are dropped" });
const TypeRef = t.String({ maxLength: 64, description: "A contact type code (or its name), see /api/contact/types" });

export const ContactIdParams = t.Object({ contact_id: IdParam("contact_id") });
export const ContactListQuery = t.Object({
  ...pageQuery(20, 100),
  tag: t.Optional(t.String({ minLength: 1, maxLength: 50, description: "Only the contacts with this tag" })),
});

export const CreateContact = t.Object(
  {
    name: Name,
    phone: Phone,
    email: t.Optional(Email),
    type: t.Optional(TypeRef),
    timezone: t.Optional(t.Nullable(Timezone)),
    tags: t.Optional(Tags),
  },
  { examples: [{ name: "Ada Lovelace", phone: "+14155552671", email: "ada@example.com", type: "customer" }] },
);

export const UpdateContact = t.Object({
  contact_id: t.Integer({ minimum: 1 }),
  name: t.Optional(Name),
  phone: t.Optional(Phone),
  email: t.Optional(t.Nullable(Email, { description: "null or an empty string clears it" })),
  type: t.Optional(t.Nullable(TypeRef)),
  timezone: t.Optional(t.Nullable(Timezone)),
  tags: t.Optional(t.Array(Tag, { maxItems: 20, description: "Replaces the contact's tags; [] removes them all" })),
});

export const ContactIdBody = t.Object({ contact_id: t.Integer({ minimum: 1 }) });

export const SearchContacts = t.Object({
  query: t.String({ minLength: 1, maxLength: 200, description: "Matched case-insensitively against name, phone and email" }),
  ...pageQuery(20, 100),
});

export const ContactResponse = Envelope(Contact);
export const ContactListResponse = Envelope(t.Object({ contacts: t.Array(Contact), pagination: Pagination }));
export const ContactTypesResponse = Envelope(t.Object({ types: t.Array(ContactType) }));
export const ContactDeletedResponse = Envelope(t.Object({ contact_id: t.Integer(), deleted: t.Boolean() }));
