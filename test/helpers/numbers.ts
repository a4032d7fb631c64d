// The phone numbers the tests use again and again, named once. Each is a valid number in
// libphonenumber's eyes (the send routes refuse anything else); none reaches a real phone, as
// every provider and phone in the tests is a local fake.

/** The plain recipient: a US mobile number (+1 415). */
export const RECIPIENT = "+14155552671";
/** A second recipient beside RECIPIENT, of the same country. */
export const SECOND_RECIPIENT = "+14155552672";
/** A recipient in another country: a UK mobile number (+44 7911). */
export const ABROAD = "+447911123456";
/** The number a test's cloud number sends from (Twilio's documented test From number). */
export const CLOUD_NUMBER = "+15005550006";
