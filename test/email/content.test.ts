// An email's text as an SMS and its recipient addresses: pure rules, fast.
import { describe, expect, test } from "bun:test";
import { numberOf, recipientOf, secretTokenOf, splitAddress } from "../../src/modules/email/address";
import { CUT_MARKER, cutToCap, freshText, smsText, textOfHtml } from "../../src/modules/email/content";

describe("the text of a mail", () => {
  test("quoted replies, reply headers and the signature are stripped", () => {
    expect(freshText("Yes, 3pm works.\n\nOn Tue, 2 Dec 2026 at 09:00, Ana <ana@x.example> wrote:\n> Can you come at 3?\n")).toBe(
      "Yes, 3pm works.",
    );
    expect(freshText("Fine\n> quoted\nstill mine\n-- \nBob\nAcme Inc")).toBe("Fine\nstill mine");
    expect(freshText("Ok\n\nFrom: Ana <ana@x.example>\nSent: Tuesday\nSubject: Re: visit\n\nold text")).toBe("Ok");
    expect(freshText("Line one\n\n\n\nLine two")).toBe("Line one\n\nLine two");
  });

  test("HTML becomes text: blocks as lines, entities decoded, scripts and quotes dropped", () => {
    expect(textOfHtml("<p>Hi&nbsp;there</p><p>A &amp; B &lt;3 &#233;&#x263A;</p>").trim()).toBe("Hi there\nA & B <3 é☺");
    expect(textOfHtml("<style>p{}</style><div>keep</div><blockquote>old</blockquote><script>x()</script>").trim()).toBe("keep");
  });

  test("the workspace's choice: body (falling back to the subject), subject, or both", () => {
    const mail = { subject: "  Door   open ", text: "Zone 3\n" };
    expect(smsText(mail, "body", 160).text).toBe("Zone 3");
    expect(smsText(mail, "subject", 160).text).toBe("Door open");
    expect(smsText(mail, "both", 160).text).toBe("Door open\nZone 3");
    expect(smsText({ subject: "Only a subject", text: "" }, "body", 160).text).toBe("Only a subject");
    expect(smsText({ subject: "", text: "" }, "both", 160).text).toBe("");
  });

  test("attachments are noted; a text over the cap is cut with the marker, never over the cap", () => {
    expect(smsText({ text: "See photo", attachments: [{}] }, "body", 160).text).toBe("See photo\n[1 attachment not sent]");
    expect(smsText({ text: "Two", attachments: [{}, {}] }, "body", 160).text).toBe("Two\n[2 attachments not sent]");
    const cut = cutToCap("x".repeat(500), 100);
    expect(cut.cut).toBe(true);
    expect(cut.text.length).toBe(100);
    expect(cut.text.endsWith(CUT_MARKER)).toBe(true);
    // Code points, not UTF-16 units: an emoji is not split in half.
    const emoji = cutToCap("😀".repeat(20), 10);
    expect([...emoji.text].length).toBe(10);
    expect(emoji.text.startsWith("😀".repeat(4))).toBe(true);
    expect(cutToCap("short", 100)).toEqual({ text: "short", cut: false });
  });
});

describe("recipient addresses", () => {
  test("numbers with punctuation, 00 and bare international digits; national ones need a default country", () => {
    expect(numberOf("+1 (415) 555-2671", null)).toBe("+14155552671");
    expect(numberOf("14155552671", null)).toBe("+14155552671");
    expect(numberOf("0044 20 7946 0958", null)).toBe("+442079460958");
    expect(numberOf("030 1234567", "DE")).toBe("+49301234567");
    expect(numberOf("(415) 555-2671", "US")).toBe("+14155552671");
    expect(recipientOf("12", null).kind).toBe("invalid");
    expect(numberOf("4155552671", "US")).toBe("+14155552671");
    expect(numberOf("14155552671", "US")).toBe("+14155552671");
  });

  test("names and tags", () => {
    expect(recipientOf("ann.example", null)).toEqual({ kind: "name", name: "ann example" });
    expect(recipientOf("Ann Example", null)).toEqual({ kind: "name", name: "Ann Example" });
    expect(recipientOf("tag-staff", null)).toEqual({ kind: "tag", tag: "staff" });
    expect(recipientOf("#night-shift", null)).toEqual({ kind: "tag", tag: "night-shift" });
  });

  test("quoted local parts, domains, and the secret address's token", () => {
    expect(splitAddress('"Ann Example"@Sms.Example')).toEqual({ local: "Ann Example", domain: "sms.example" });
    expect(secretTokenOf("sAbCdEfGhIjKlMnOpQr+15551234567")).toEqual({ token: "sAbCdEfGhIjKlMnOpQr", rest: "15551234567" });
    expect(secretTokenOf("+15551234567")).toBeNull();
    expect(secretTokenOf("short+1555")).toBeNull();
  });
});
