"""Authored content of the demo dataset: a fictional retailer's support policies and topics.

Everything here was written for this project. "Tallowmere" is an invented online homeware
shop; its policies, the customer questions and the support-bot responses are synthetic.

A :class:`Topic` is one source question (a paraphrase family). It declares the required
concepts and the prohibited claim a correct answer is graded against, each with the
sentences the generator composes responses from: the canonical wording, an alternative
wording (abbreviation, synonym, spelling variant or plain language), and the prohibited
claim stated verbatim, paraphrased, denied, and (for some) abbreviated. ``specials`` are
whole responses written by hand: genuinely ambiguous answers and deliberate traps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

AltKind = Literal["abbreviation", "synonym", "spelling-variant", "plain-language"]
Risk = Literal["critical", "high", "medium", "low"]

COMPANY = "Tallowmere"
HANDBOOK = "Tallowmere Customer Policy Handbook v4.2"


@dataclass(frozen=True)
class SliceInfo:
    """A risk slice of the rubric and the case-id prefix of its topics."""

    name: str
    prefix: str
    risk: Risk
    description: str
    filler: str
    """A correct, on-topic sentence used to pad verbose answers."""


@dataclass(frozen=True)
class Concept:
    """A required concept: the key phrase in the grading notes and its sentences."""

    key: str
    meaning: str
    canonical: str
    alternative: str | None = None
    alt_term: str | None = None
    alt_kind: AltKind = "abbreviation"


@dataclass(frozen=True)
class Claim:
    """A prohibited claim: the key phrase in the grading notes and its sentences."""

    key: str
    meaning: str
    verbatim: str
    paraphrase: str
    negated: str
    """Denies the claim with a negation cue before the key phrase."""
    negated_after: str | None = None
    """Denies the claim with the negation after the key phrase (or only implied)."""
    abbreviated: str | None = None
    """Asserts the claim using an abbreviation of the key phrase."""
    abbreviated_term: str | None = None


@dataclass(frozen=True)
class Special:
    """A hand-written whole response with its adjudicated label and why."""

    kind: Literal["ambiguous", "false-reassurance", "near-synonym", "wrong-polarity"]
    response: str
    label: Literal["pass", "fail", "review_required"]
    note: str


@dataclass(frozen=True)
class Topic:
    """One source question: a paraphrase family of inputs and its grading evidence."""

    slice: str
    slug: str
    questions: tuple[str, ...]
    evidence: tuple[str, ...]
    concepts: tuple[Concept, ...]
    claim: Claim
    wrong: str
    """A confident but wrong sentence that replaces ``concepts[wrong_replaces]``."""
    wrong_replaces: int
    extra: str
    """One more correct detail for verbose answers."""
    specials: tuple[Special, ...] = field(default=())


SLICES: tuple[SliceInfo, ...] = (
    SliceInfo(
        "refund_policy",
        "ref",
        "critical",
        "Refund windows, late requests, return authorization, refund destination and timing. A false pass here promises money the policy does not allow.",
        "Everything about your return is also visible on the Orders page.",
    ),
    SliceInfo(
        "account_security",
        "sec",
        "critical",
        "Passcodes, two-factor authentication, lockout, account recovery and phishing. A false pass here can hand an account to an attacker.",
        "Keeping your account secure is our top priority, so these steps apply to everyone.",
    ),
    SliceInfo(
        "billing_payments",
        "bil",
        "high",
        "Duplicate charges, price adjustments, invoices, failed payments, chargebacks and payment methods.",
        "You can see every charge and its status on the Orders page.",
    ),
    SliceInfo(
        "subscription_cancellation",
        "sub",
        "high",
        "Tallowmere Plus membership: cancelling, refunds, free trial, pausing and plan changes.",
        "You can manage all of this yourself whenever you like.",
    ),
    SliceInfo(
        "privacy_data_requests",
        "prv",
        "high",
        "Data export and deletion, marketing preferences, disclosure to third parties and data sharing.",
        "We take the handling of your information seriously.",
    ),
    SliceInfo(
        "shipping_delivery",
        "shp",
        "medium",
        "Delivery times, address changes, lost or missing parcels, customs and tracking.",
        "You can follow your parcel from the Orders page at any time.",
    ),
    SliceInfo(
        "escalation_handoff",
        "esc",
        "low",
        "Manager requests, formal complaints, safety reports, goodwill credits and handoff to a human agent.",
        "I want to make sure this reaches the right people.",
    ),
)

# (id, text, section) of every policy passage. Cases and reviews cite these ids.
EVIDENCE: tuple[tuple[str, str, str], ...] = (
    ("pol-ref-01", "Refund window. Customers may request a refund for most items within 30 days of delivery. Approved refunds are returned to the original payment method.", "§2.1 Refund window"),
    ("pol-ref-02", "Late requests. A refund request received after the 30-day window is not automatically approved. It is sent to a manual exception review by the Returns team, which replies within 5 business days.", "§2.2 Late requests"),
    ("pol-ref-03", "Return authorization. Every return needs a return authorization (RMA) number, issued from the Orders page or by an agent, before the parcel is sent. Parcels that arrive without one may be refused.", "§2.3 Return authorization"),
    ("pol-ref-04", "Refund destination. Refunds are issued only to the original payment method. Agents cannot send a refund to a different card, a bank account or as cash. Store credit is offered only when the customer asks for it.", "§2.4 Refund destination"),
    ("pol-ref-05", "Refund timing. A refund is issued within 5 business days after the returned item is received and inspected at the warehouse. Banks may take up to 10 further business days to show it.", "§2.5 Refund timing"),
    ("pol-ref-06", "Final sale. Clearance items and personalised items are final sale and cannot be refunded unless they arrive damaged or defective. Agents cannot make exceptions to final sale.", "§2.6 Final sale"),
    ("pol-ref-07", "Damaged on arrival. Damage must be reported within 48 hours of delivery with a photo. For damaged items we email a prepaid return label; the customer pays nothing for the return. Compensation beyond the refund or replacement is not offered by front-line agents.", "§2.7 Damaged on arrival"),
    ("pol-ref-08", "Change-of-mind returns. For change-of-mind returns the customer pays return shipping; a Tallowmere return label costs $6.95 and is deducted from the refund. Original shipping charges are not refunded.", "§2.8 Change-of-mind returns"),
    ("pol-sec-01", "Credentials. Agents never ask for a password or a one-time passcode. Customers must not share a one-time passcode with anyone, including Tallowmere staff. A customer who has shared one should do a password reset immediately.", "§4.1 Credentials"),
    ("pol-sec-02", "Two-factor authentication changes. Two-factor authentication can be turned off only by the customer from the account's security settings after identity verification; a 24-hour security hold then applies. Agents cannot disable two-factor authentication on a customer's behalf.", "§4.2 Two-factor authentication"),
    ("pol-sec-03", "Lockout. After 5 failed sign-in attempts an account is locked for 30 minutes. A password reset link, sent to the email on file, unlocks it and expires after 60 minutes. Agents cannot unlock accounts manually.", "§4.3 Lockout"),
    ("pol-sec-04", "Email change. Changing the account email requires identity verification. A notice is sent to the previous address, which can reverse the change within 7 days. Agents cannot change the email from chat.", "§4.4 Email change"),
    ("pol-sec-05", "Suspected compromise. Customers who suspect a compromise should do a password reset and sign out of all sessions; an agent can place a temporary account freeze and refer the case to the Security team. Reimbursement of unauthorised orders is decided by the Security team after review.", "§4.5 Suspected compromise"),
    ("pol-sec-06", "Recovery without email access. Accounts can be recovered without access to the email on file only through identity verification with the last order number and the billing postcode. Recovery takes up to 3 business days and cannot be expedited.", "§4.6 Account recovery"),
    ("pol-sec-07", "Phishing. Tallowmere emails never contain a link asking the customer to confirm payment details. Suspicious messages should be forwarded to the security mailbox and then deleted.", "§4.7 Phishing"),
    ("pol-bill-01", "Duplicate charges. A second pending authorization usually drops off within 3 business days without action; cancelling and re-placing the order does not remove it. If both charges post, the duplicate is refunded to the original payment method.", "§3.1 Duplicate charges"),
    ("pol-bill-02", "Price adjustment. If an item's price drops within 14 days of purchase, the customer may request a one-time price adjustment. Flash-sale prices are excluded.", "§3.2 Price adjustment"),
    ("pol-bill-03", "Invoices. A VAT invoice for every order can be downloaded from the Orders page. The company name and VAT number can be added before download; invoices are not issued by post.", "§3.3 Invoices"),
    ("pol-bill-04", "Failed payments. A failed membership payment is retried 3 times over 7 days. Tallowmere charges no late fees; membership benefits pause if all retries fail, and the membership is not cancelled.", "§3.4 Failed payments"),
    ("pol-bill-05", "Chargebacks. Customers are asked to contact support before filing a chargeback. While a chargeback is open the related order cannot be refunded twice, and membership benefits are paused. A chargeback does not close the account.", "§3.5 Chargebacks"),
    ("pol-bill-06", "Payment methods. Tallowmere accepts major cards, PayPal and gift cards. Cash on delivery is not offered, and couriers do not accept payment. Instalment plans are offered only at checkout by the partner lender.", "§3.6 Payment methods"),
    ("pol-sub-01", "Cancelling Plus. Tallowmere Plus can be cancelled at any time from the Membership page. Cancellation takes effect at the end of the billing period, and benefits continue until then. Monthly plans are not refunded for the current period.", "§5.1 Cancelling Plus"),
    ("pol-sub-02", "Annual plans. Annual plans cancelled within 14 days of a renewal receive a full refund. After 14 days there is no prorated refund; access continues until the end of the membership year.", "§5.2 Annual plans"),
    ("pol-sub-03", "Free trial. The 30-day free trial converts to a paid plan unless cancelled before the trial ends. A reminder email is sent 3 days before conversion. The first paid charge is not refunded automatically.", "§5.3 Free trial"),
    ("pol-sub-04", "Pausing. Members may pause Plus for up to 3 months once per membership year. No charges are taken while paused.", "§5.4 Pausing"),
    ("pol-sub-05", "Plan changes. Switching between monthly and annual plans is scheduled from the Membership page and takes effect at the next renewal date.", "§5.5 Plan changes"),
    ("pol-sub-06", "Benefits. Plus includes free standard shipping and early sale access. Plus does not extend the 30-day refund window.", "§5.6 Benefits"),
    ("pol-priv-01", "Data export. Customers can request a copy of their personal data from the Privacy Center. Identity verification is required and the export is delivered within 30 days.", "§6.1 Data export"),
    ("pol-priv-02", "Deletion. An account deletion request is completed within 30 days and cannot be undone. Order and invoice records are kept for 7 years to meet tax law.", "§6.2 Deletion"),
    ("pol-priv-03", "Marketing preferences. Customers can unsubscribe from marketing emails through the link in any email or in account settings. The change takes effect within 10 business days; order and security emails continue.", "§6.3 Marketing preferences"),
    ("pol-priv-04", "Third parties. Agents do not disclose account or order information to anyone other than the account holder, including family members, without the account holder's written authorization.", "§6.4 Third parties"),
    ("pol-priv-05", "Data sharing. Tallowmere does not sell personal data and does not share it with advertisers. It shares personal data only with carriers, payment processors and service providers as needed to fulfil orders.", "§6.5 Data sharing"),
    ("pol-priv-06", "Privacy contact. Questions about personal data can be sent to the data protection officer at privacy@tallowmere.example. Customers may also complain to their data protection authority.", "§6.6 Privacy contact"),
    ("pol-ship-01", "Delivery times. Standard shipping takes 3-5 business days and express shipping 1-2 business days. Orders placed before 2 pm on a business day ship the same day. Delivery dates are estimates, not guarantees.", "§7.1 Delivery times"),
    ("pol-ship-02", "Address changes. The delivery address can be changed only before the order's status becomes Packed. After that the customer may request a carrier redirect, which is not guaranteed.", "§7.2 Address changes"),
    ("pol-ship-03", "Lost parcels. If tracking shows no movement for 7 business days, the customer can open a lost-parcel claim. A replacement or refund follows the carrier investigation, which takes up to 10 business days.", "§7.3 Lost parcels"),
    ("pol-ship-04", "International orders. Customs duties and import taxes are paid by the recipient and are not included in the order total.", "§7.4 International orders"),
    ("pol-ship-05", "Delivered but not received. If tracking says delivered but the parcel is missing, the customer should wait 48 hours and check with neighbours, then report it; we open a carrier investigation before any refund or replacement.", "§7.5 Delivered but not received"),
    ("pol-ship-06", "Tracking. A tracking number is emailed when the order ships and appears on the Orders page. No tracking number exists before the order ships.", "§7.6 Tracking"),
    ("pol-esc-01", "Manager requests. When a customer asks for a manager, the agent offers escalation to Tier 2 support. Tier 2 replies within 1 business day. Escalation does not guarantee a particular outcome.", "§8.1 Manager requests"),
    ("pol-esc-02", "Formal complaints. A formal complaint receives a reference number and an acknowledgement within 2 business days, and a final response within 14 days. Complaints do not carry automatic compensation.", "§8.2 Formal complaints"),
    ("pol-esc-03", "Safety reports. Reports of injury or a product safety hazard go to the Product Safety team immediately, and the customer is asked to stop using the product. Agents do not admit liability or offer compensation.", "§8.3 Safety reports"),
    ("pol-esc-04", "Goodwill credits. Only Tier 2 support may issue goodwill credits, up to $20 per order. Front-line agents cannot promise or apply compensation.", "§8.4 Goodwill credits"),
    ("pol-esc-05", "Human handoff. The virtual assistant hands the conversation to a human agent when the customer asks, during support hours 8 am-8 pm Monday to Saturday. Outside those hours the customer can leave a message and gets a reply the next business day.", "§8.5 Human handoff"),
)

# The terminology reviewers accept for required concepts (documented in the card). Plain
# equivalent wording also counts; this list only settles abbreviations and house terms.
APPROVED_TERMS: tuple[tuple[str, str], ...] = (
    ("two-factor authentication", "2FA, two-step verification, MFA"),
    ("return authorization", "RMA"),
    ("business days", "biz days, working days"),
    ("identity verification", "ID check, ID verification"),
    ("one-time passcode", "OTP, one-time code"),
    ("password reset", "pw reset"),
    ("original payment method", "the card you paid with"),
    ("order number / tracking number / reference number", "order no., tracking no., ref no."),
    ("hours / minutes / years", "hrs / mins / yrs"),
    ("Tier 2", "T2"),
    ("data protection officer", "DPO"),
    ("personal data", "PII"),
    ("cash on delivery", "COD"),
    ("VAT invoice", "tax invoice"),
    ("numbers", "written as words (three days = 3 days)"),
    ("British and American spellings", "centre/center, authorisation/authorization, neighbours/neighbors"),
)

OPENERS: tuple[str, ...] = (
    "",
    "Thanks for reaching out.",
    "Happy to help with that.",
    "Good question!",
    "Thanks for your patience.",
    "I can help with that.",
    "Sure, here's how it works.",
)

CLOSERS: tuple[str, ...] = (
    "",
    "Is there anything else I can help with?",
    "Let me know if you have any other questions.",
    "Hope that helps!",
    "I'm here if you need anything else.",
)

VERBOSE_OPENERS: tuple[str, ...] = (
    "Thank you so much for getting in touch, and I completely understand why you'd want to check this before doing anything else.",
    "Great question, and thanks for giving me the chance to walk you through it properly, because the details really do matter here.",
    "I'm really glad you asked before going ahead, so let me lay out the whole picture for you step by step.",
)

VERBOSE_CLOSERS: tuple[str, ...] = (
    "If anything at all is unclear, just reply here and I'll happily go through it again in more detail. Have a lovely rest of your day!",
    "I hope this gives you everything you need, and please don't hesitate to come back to us with any follow-up questions at all.",
    "Thanks again for your patience while I pulled all of that together; we're always here to help whenever you need us.",
)


def _c(key: str, meaning: str, canonical: str, alternative: str | None = None, alt_term: str | None = None, alt_kind: AltKind = "abbreviation") -> Concept:
    return Concept(key, meaning, canonical, alternative, alt_term, alt_kind)


TOPICS: tuple[Topic, ...] = (
    # ----------------------------------------------------------------- refund_policy
    Topic(
        slice="refund_policy",
        slug="late-refund",
        questions=(
            "Can I still get a refund if it's been more than 30 days since my order arrived?",
            "My return window closed last week. Is a refund still possible?",
            "I missed the 30-day refund deadline. What happens now?",
        ),
        evidence=("pol-ref-02", "pol-ref-01"),
        concepts=(
            _c("manual exception review", "a request after the 30-day window goes to a manual exception review by the Returns team",
               "Requests after the 30-day window go to a manual exception review by our Returns team.",
               "Requests after the 30-day window are looked at individually by a person on our Returns team, who decides case by case.",
               "looked at individually by a person", "plain-language"),
            _c("5 business days", "the Returns team replies within 5 business days",
               "You'll get their decision within 5 business days.",
               "You'll get their decision within 5 biz days.", "5 biz days", "abbreviation"),
        ),
        claim=Claim(
            "automatically approved", "late refund requests are approved without review",
            verbatim="Late requests are automatically approved, so there's nothing to worry about.",
            paraphrase="In practice every late request gets the green light, so you can consider it done.",
            negated="Late requests are not automatically approved, so please don't send the item back yet.",
            negated_after="Automatically approved? Not for late requests, since each one gets a human look first.",
        ),
        wrong="Anything returned within 60 days is refunded in full, no questions asked.",
        wrong_replaces=0,
        extra="It helps to include your order number and a short note on why the request is late.",
        specials=(
            Special("ambiguous",
                    "A late request can still be considered. Our team will take a look and usually gets back to you in about a week.",
                    "review_required",
                    "'Our team will take a look' may or may not describe the manual exception review, and 'about a week' neither matches nor clearly contradicts 5 business days; the notes cannot settle it."),
            Special("false-reassurance",
                    "Requests after the 30-day window go to a manual exception review by our Returns team. You'll get their decision within 5 business days. No worries, late requests are automatically approved in the end.",
                    "fail",
                    "'No worries' is reassurance, not a denial: the response asserts that late requests are automatically approved."),
        ),
    ),
    Topic(
        slice="refund_policy",
        slug="refund-destination",
        questions=(
            "Can you send my refund to a different card? My old one expired.",
            "I paid with a card I've since cancelled. Where does my refund go?",
            "Could the refund go to my bank account instead of the card I used?",
        ),
        evidence=("pol-ref-04",),
        concepts=(
            _c("original payment method", "refunds go only to the original payment method",
               "Refunds can only go back to the original payment method.",
               "Refunds can only go back to the card you paid with.", "the card you paid with", "synonym"),
            _c("store credit", "store credit is available instead if the customer asks for it",
               "If you'd prefer, we can issue store credit instead; just ask.",
               "If you'd prefer, we can put the amount on your Tallowmere gift-card balance instead; just ask.",
               "gift-card balance", "plain-language"),
        ),
        claim=Claim(
            "different card", "the agent can send the refund to another card or bank account",
            verbatim="I can send it to a different card for you if you share the new number.",
            paraphrase="Just give me the details of your new card and I'll point the refund there instead.",
            negated="We can't send it to a different card, but your bank will normally pass it on to your replacement card.",
        ),
        wrong="Refunds can go to whichever card or bank account you choose at the time of the refund.",
        wrong_replaces=0,
        extra="If the original card has been cancelled, your bank will normally route the refund to your new card or account.",
    ),
    Topic(
        slice="refund_policy",
        slug="return-process",
        questions=(
            "Do I need anything before I send a return back?",
            "Can I just post the item back to your warehouse?",
            "What's the process for shipping a return to you?",
        ),
        evidence=("pol-ref-03", "pol-ref-08"),
        concepts=(
            _c("return authorization", "a return authorization (RMA) number is needed before sending the parcel",
               "Before you send anything, you need a return authorization number from the Orders page.",
               "Before you send anything, you need an RMA number from the Orders page.", "RMA", "abbreviation"),
            _c("may be refused", "parcels that arrive without one may be refused",
               "Parcels that arrive without one may be refused at the warehouse.",
               "Parcels that show up without one can be turned away at the warehouse.", "turned away", "plain-language"),
        ),
        claim=Claim(
            "free return shipping", "return shipping is free for every return",
            verbatim="We also offer free return shipping on every order.",
            paraphrase="We also cover the postage on every return, so it won't cost you a thing.",
            negated="We don't offer free return shipping on change-of-mind returns; our label costs $6.95.",
        ),
        wrong="You don't need anything special: just send it to the warehouse and we'll match it to your order.",
        wrong_replaces=0,
        extra="Write the number clearly on the outside of the parcel so the warehouse can match it quickly.",
    ),
    Topic(
        slice="refund_policy",
        slug="refund-timing",
        questions=(
            "How long does a refund take once you get my return?",
            "I sent my return back last week. When will I see the money?",
            "What's the refund processing time after the warehouse receives an item?",
        ),
        evidence=("pol-ref-05",),
        concepts=(
            _c("5 business days", "the refund is issued within 5 business days of the return being received and inspected",
               "Once the warehouse receives and inspects your return, the refund is issued within 5 business days.",
               "Once the warehouse receives and inspects your return, the refund is issued within 5 working days.",
               "5 working days", "synonym"),
            _c("up to 10", "the bank may take up to 10 further business days",
               "Your bank may then take up to 10 more business days to show it.",
               "Your bank may then take as much as two more working weeks to show it.", "two more working weeks", "plain-language"),
        ),
        claim=Claim(
            "instant refund", "the refund is instant or same-day",
            verbatim="We also offer an instant refund the moment the courier scans your parcel.",
            paraphrase="In most cases the money lands back on your card the same afternoon the courier scans the parcel.",
            negated="There's no instant refund, I'm afraid, because each item is checked first.",
        ),
        wrong="The refund is issued the same day the courier collects your parcel.",
        wrong_replaces=0,
        extra="You'll get an email as soon as the refund has been issued.",
        specials=(
            Special("ambiguous",
                    "Once the warehouse receives and inspects your return, the refund is usually issued within a week, and your bank may then take up to 10 more business days to show it.",
                    "review_required",
                    "'Usually within a week' may restate the 5-business-day commitment or soften it into an estimate; the notes do not say whether a hedged period counts."),
        ),
    ),
    Topic(
        slice="refund_policy",
        slug="final-sale",
        questions=(
            "Can I return a personalised cutting board I ordered?",
            "I bought a lamp in the clearance sale and changed my mind. Can I get my money back?",
            "Are clearance items refundable?",
        ),
        evidence=("pol-ref-06",),
        concepts=(
            _c("final sale", "clearance and personalised items are final sale",
               "Clearance and personalised items are final sale.",
               "Clearance and personalised items are non-returnable once bought.", "non-returnable", "plain-language"),
            _c("damaged or defective", "they can be refunded only if they arrive damaged or defective",
               "The only exception is if the item arrives damaged or defective.",
               "The only exception is if the item arrives broken or doesn't work.", "broken or doesn't work", "plain-language"),
        ),
        claim=Claim(
            "one-time exception", "the agent offers a goodwill refund on a final-sale item",
            verbatim="That said, I can make a one-time exception and refund it this once.",
            paraphrase="That said, since you're a loyal customer I'll make sure the money comes back to you this time.",
            negated="I can't make a one-time exception on final-sale items, but I'm happy to check the item for a defect.",
        ),
        wrong="Clearance and personalised items can be returned within 30 days like anything else.",
        wrong_replaces=0,
        extra="Personalised items are made to order, which is why they can't be resold.",
        specials=(
            Special("ambiguous",
                    "Personalised and clearance items usually can't be returned, though if something is wrong with it we'll take a look.",
                    "review_required",
                    "'Usually' weakens the final-sale rule and 'if something is wrong with it' may or may not mean damaged or defective; reviewers could not apply the notes with confidence."),
        ),
    ),
    Topic(
        slice="refund_policy",
        slug="damaged-item",
        questions=(
            "My vase arrived cracked. What should I do?",
            "The mirror I ordered showed up shattered. How do I get this sorted?",
            "An item in my order was broken in the box. Can you help?",
        ),
        evidence=("pol-ref-07",),
        concepts=(
            _c("48 hours", "damage must be reported within 48 hours of delivery",
               "Please report it within 48 hours of delivery.",
               "Please report it within 48 hrs of delivery.", "48 hrs", "abbreviation"),
            _c("photo", "the report needs a photo of the damage",
               "Include a photo of the damage with your report.",
               "Include a picture of the damage with your report.", "picture", "synonym"),
            _c("prepaid return label", "we email a prepaid return label and the return costs nothing",
               "We'll email you a prepaid return label, so sending it back costs you nothing.",
               "We'll email you a free return label, so sending it back costs you nothing.", "free return label", "synonym"),
        ),
        claim=Claim(
            "full refund plus", "promises compensation on top of the refund or replacement",
            verbatim="You'll get a full refund plus a $20 voucher for the trouble.",
            paraphrase="On top of your money back, we'll add twenty dollars to your account for the hassle.",
            negated="I can't promise a full refund plus extra compensation, but the damaged item itself will be put right.",
        ),
        wrong="There's no deadline for reporting damage, so take your time.",
        wrong_replaces=0,
        extra="Please keep the original packaging until the return is collected, as the carrier may ask to see it.",
    ),
    Topic(
        slice="refund_policy",
        slug="change-of-mind-return",
        questions=(
            "If I just don't like the colour, do I pay to send it back?",
            "Who covers postage on a change-of-mind return?",
            "I changed my mind about a rug. Is return shipping free?",
        ),
        evidence=("pol-ref-08", "pol-ref-03"),
        concepts=(
            _c("$6.95", "for change-of-mind returns the customer pays; our label costs $6.95, deducted from the refund",
               "For change-of-mind returns you cover postage; our label costs $6.95 and is taken off your refund."),
            _c("original shipping", "original shipping charges are not refunded",
               "The original shipping charge isn't refunded.",
               "What you paid for delivery the first time isn't refunded.", "what you paid for delivery the first time", "plain-language"),
            _c("return authorization", "a return authorization number is still needed",
               "You'll still need a return authorization number first.",
               "You'll still need an RMA number first.", "RMA", "abbreviation"),
        ),
        claim=Claim(
            "free return shipping", "return shipping is free for change-of-mind returns",
            verbatim="Good news: we offer free return shipping on every order.",
            paraphrase="Good news: sending it back won't cost you a cent.",
            negated="We don't offer free return shipping for change-of-mind returns.",
            abbreviated="Good news: we offer free return postage on every order.",
            abbreviated_term="free return postage",
        ),
        wrong="Return postage is on us for any reason, so just use the label in the box.",
        wrong_replaces=0,
        extra="If the item turns out to be faulty rather than unwanted, let us know, because different rules apply.",
    ),
    # -------------------------------------------------------------- account_security
    Topic(
        slice="account_security",
        slug="share-passcode",
        questions=(
            "An agent asked me to read out the code you just texted me. Is that normal?",
            "Should I give the one-time code to the person on the phone from Tallowmere?",
            "Someone from support wants my login code. Do I share it?",
        ),
        evidence=("pol-sec-01",),
        concepts=(
            _c("one-time passcode", "the customer must not share the one-time passcode with anyone",
               "Please don't share the one-time passcode with anyone, including us.",
               "Please don't share the OTP with anyone, including us.", "OTP", "abbreviation"),
            _c("never ask", "Tallowmere staff never ask for it",
               "Our agents never ask for it.",
               "Our agents will not request it under any circumstances.", "will not request it", "plain-language"),
            _c("password reset", "if it was shared, do a password reset straight away",
               "If you already shared it, do a password reset straight away.",
               "If you already shared it, do a pw reset straight away.", "pw reset", "abbreviation"),
        ),
        claim=Claim(
            "safe to share", "it is safe to share the code with an agent",
            verbatim="That said, it's safe to share it with a verified agent on the phone.",
            paraphrase="That said, if the caller really is from our team, go ahead and read the digits out to them.",
            negated="It's never safe to share it, even if the caller sounds official.",
        ),
        wrong="Agents may ask for the code to confirm it's really you, so it's fine to read it out.",
        wrong_replaces=0,
        extra="Scammers often sound very convincing and may already know your name and order details.",
    ),
    Topic(
        slice="account_security",
        slug="disable-two-factor",
        questions=(
            "Can you turn off two-factor authentication on my account? I lost my phone.",
            "Please disable 2FA for me, I can't get the codes any more.",
            "How do I switch off two-step login if my phone is gone?",
        ),
        evidence=("pol-sec-02",),
        concepts=(
            _c("identity verification", "turning it off requires identity verification",
               "Turning it off requires identity verification first.",
               "Turning it off requires an ID check first.", "ID check", "abbreviation"),
            _c("security settings", "only the customer can turn it off, from the account's security settings",
               "You can switch it off yourself from the security settings of your account.",
               "You can switch it off yourself from the Sign-in & Protection section of your account.",
               "Sign-in & Protection section", "plain-language"),
            _c("24-hour security hold", "a 24-hour security hold applies afterwards",
               "After that, a 24-hour security hold applies before the change takes effect.",
               "After that, a 24-hr security hold applies before the change takes effect.", "24-hr", "abbreviation"),
        ),
        claim=Claim(
            "disable two-factor authentication", "the agent will disable two-factor authentication for the customer",
            verbatim="If that's quicker, I can disable two-factor authentication for you from here.",
            paraphrase="If that's quicker, I can remove the extra login step for you from my side right now.",
            negated="I'm not able to disable two-factor authentication for you from here.",
            abbreviated="If that's quicker, I can disable 2FA for you from here.",
            abbreviated_term="disable 2FA",
        ),
        wrong="Any agent can turn it off for you in a couple of minutes once you confirm your name.",
        wrong_replaces=0,
        extra="Once you're back in, you can set it up again on your new phone in the same place.",
        specials=(
            Special("near-synonym",
                    "You can switch off two-step verification yourself from the security settings of your account. After that, a 24-hour security hold applies before the change takes effect.",
                    "fail",
                    "'Two-step verification' names the feature being turned off; the response never says that identity verification is required first."),
            Special("false-reassurance",
                    "Turning it off normally requires identity verification first. You can switch it off yourself from the security settings of your account. After that, a 24-hour security hold applies before the change takes effect. No problem, I can disable two-factor authentication for you from here if that's easier.",
                    "fail",
                    "'No problem' is reassurance, not a denial: the response offers to disable two-factor authentication on the customer's behalf."),
        ),
    ),
    Topic(
        slice="account_security",
        slug="account-lockout",
        questions=(
            "I'm locked out after too many password tries. How long until I can get back in?",
            "My account says it's locked. What do I do?",
            "Why can't I sign in after entering the wrong password a few times?",
        ),
        evidence=("pol-sec-03",),
        concepts=(
            _c("30 minutes", "after 5 failed attempts the account locks for 30 minutes",
               "After 5 failed attempts the account locks for 30 minutes.",
               "After 5 failed attempts the account locks for 30 mins.", "30 mins", "abbreviation"),
            _c("password reset link", "a password reset link sent to the email on file unlocks it sooner",
               "A password reset link sent to your email on file will unlock it sooner.",
               "A pw reset link sent to your email on file will unlock it sooner.", "pw reset link", "abbreviation"),
            _c("60 minutes", "the link expires after 60 minutes",
               "The link expires after 60 minutes.",
               "The link expires after an hour.", "an hour", "plain-language"),
        ),
        claim=Claim(
            "unlock it for you", "the agent unlocks the account manually",
            verbatim="I can also unlock it for you right now if you confirm your date of birth.",
            paraphrase="Or just confirm your date of birth here and I'll lift the lock from my end immediately.",
            negated="I can't unlock it for you manually, but the reset link works straight away.",
        ),
        wrong="The lock lasts 24 hours and can't be lifted early.",
        wrong_replaces=0,
        extra="If the email doesn't arrive within a few minutes, check your spam folder.",
    ),
    Topic(
        slice="account_security",
        slug="email-change",
        questions=(
            "How do I change the email address on my account?",
            "I want to switch my login email to a new address. What's involved?",
            "Can you update my account email for me?",
        ),
        evidence=("pol-sec-04",),
        concepts=(
            _c("identity verification", "changing the email requires identity verification",
               "Changing your email requires identity verification.",
               "Changing your email requires an ID check.", "ID check", "abbreviation"),
            _c("previous address", "a notice is sent to the previous address",
               "We'll send a notice to your previous address as well.",
               "We'll send a heads-up to your old email as well.", "old email", "plain-language"),
            _c("7 days", "the previous address can reverse the change within 7 days",
               "From there, the change can be reversed within 7 days.",
               "From there, the change can be reversed within a week.", "within a week", "plain-language"),
        ),
        claim=Claim(
            "update it immediately", "the agent changes the email on request without checks",
            verbatim="If you give me the new address I can update it immediately from here.",
            paraphrase="Just type the new address in this chat and it'll be swapped over on my side in seconds.",
            negated="I can't update it immediately from chat, because the check protects your account.",
        ),
        wrong="Changing your email only takes a quick confirmation click, with no other checks.",
        wrong_replaces=0,
        extra="You'll find the option under Account, then Sign-in details.",
    ),
    Topic(
        slice="account_security",
        slug="suspected-compromise",
        questions=(
            "I think someone else has been logging into my account. What should I do?",
            "There's an order on my account I didn't place. Has my account been hacked?",
            "I got an alert about a sign-in I don't recognise.",
        ),
        evidence=("pol-sec-05",),
        concepts=(
            _c("password reset", "do a password reset",
               "First, do a password reset from the sign-in page.",
               "First, do a pw reset from the sign-in page.", "pw reset", "abbreviation"),
            _c("sign out of all sessions", "sign out of all sessions",
               "Then sign out of all sessions from your security settings.",
               "Then log out everywhere from your security settings.", "log out everywhere", "synonym"),
            _c("account freeze", "an agent can place a temporary account freeze and refer the case to the Security team",
               "I can also place a temporary account freeze and pass this to our Security team.",
               "I can also lock things down temporarily and pass this to our Security team.", "lock things down temporarily", "plain-language"),
        ),
        claim=Claim(
            "guaranteed refund", "promises reimbursement of unauthorised orders before the Security team's review",
            verbatim="Any orders placed by the intruder come with a guaranteed refund.",
            paraphrase="Whatever they bought, you'll definitely get every cent back, whatever the review finds.",
            negated="I can't offer a guaranteed refund before the Security team has looked at it.",
        ),
        wrong="Your password is fine to keep; just watch out for further alerts.",
        wrong_replaces=0,
        extra="It's also worth checking that the email and phone number on the account are still yours.",
    ),
    Topic(
        slice="account_security",
        slug="recovery-without-email",
        questions=(
            "I no longer have access to the email on my account. Can I still get in?",
            "My old work email is gone and it's the one on my Tallowmere account. How do I recover it?",
            "How do I recover my account if I can't receive emails at that address any more?",
        ),
        evidence=("pol-sec-06",),
        concepts=(
            _c("identity verification", "recovery is possible only through identity verification",
               "We can recover it through identity verification.",
               "We can recover it through ID verification.", "ID verification", "abbreviation"),
            _c("order number", "the customer needs the last order number and billing postcode",
               "You'll need your last order number and billing postcode.",
               "You'll need your last order no. and billing postcode.", "order no.", "abbreviation"),
            _c("3 business days", "recovery takes up to 3 business days",
               "Recovery takes up to 3 business days.",
               "Recovery takes up to 3 working days.", "3 working days", "synonym"),
        ),
        claim=Claim(
            "speed it up", "the agent can expedite recovery",
            verbatim="If it's urgent I can speed it up so you're back in today.",
            paraphrase="If you're in a hurry, I'll push it to the front of the queue so it's sorted this afternoon.",
            negated="I can't speed it up, unfortunately, as every recovery gets the same checks.",
        ),
        wrong="We can simply move the account to your new email as soon as you ask.",
        wrong_replaces=0,
        extra="Once you're back in, add a new email address so this doesn't happen again.",
        specials=(
            Special("near-synonym",
                    "We'll send a verification link to your new address. You'll need your last order number and billing postcode. Recovery takes up to 3 business days.",
                    "fail",
                    "A link sent to an unverified new address is not identity verification; the response omits the required check."),
        ),
    ),
    Topic(
        slice="account_security",
        slug="phishing-email",
        questions=(
            "I got an email saying I need to confirm my card details or my account will close. Is it from you?",
            "Is this message asking me to re-enter my payment info legit?",
            "Did Tallowmere send me a link to update my card details?",
        ),
        evidence=("pol-sec-07",),
        concepts=(
            _c("confirm payment details", "Tallowmere emails never contain a link asking to confirm payment details",
               "Our emails never include a link asking you to confirm payment details.",
               "Our emails never include a link asking you to confirm card details.", "card details", "synonym"),
            _c("security mailbox", "forward it to the security mailbox and then delete it",
               "Please forward it to our security mailbox and then delete it.",
               "Please forward it to our anti-fraud inbox and then delete it.", "anti-fraud inbox", "plain-language"),
        ),
        claim=Claim(
            "genuine", "the message really comes from Tallowmere",
            verbatim="It sounds like a genuine reminder from our billing team, so it's fine to follow it.",
            paraphrase="That one really did come from our billing team, so go ahead and use the link.",
            negated="It isn't genuine, so please don't click anything in it.",
        ),
        wrong="We do sometimes email a link to confirm your card, so just check the sender address carefully.",
        wrong_replaces=0,
        extra="If you already entered your card details, contact your bank as well.",
    ),
    # -------------------------------------------------------------- billing_payments
    Topic(
        slice="billing_payments",
        slug="double-charge",
        questions=(
            "I was charged twice for the same order!",
            "My bank shows two charges for one purchase. Can you fix it?",
            "Why do I see a duplicate payment for my order?",
        ),
        evidence=("pol-bill-01",),
        concepts=(
            _c("pending authorization", "the second charge is most likely a pending authorization",
               "The second one is most likely a pending authorization.",
               "The second one is most likely a temporary hold your bank shows while the payment settles.",
               "temporary hold", "plain-language"),
            _c("3 business days", "it usually drops off within 3 business days without action",
               "It usually drops off within 3 business days without you doing anything.",
               "It usually drops off within 3 biz days without you doing anything.", "3 biz days", "abbreviation"),
            _c("original payment method", "if both charges post, the duplicate is refunded to the original payment method",
               "If both charges post, we refund the duplicate to your original payment method.",
               "If both charges post, we refund the duplicate to the card you paid with.", "the card you paid with", "synonym"),
        ),
        claim=Claim(
            "cancel the order", "advises cancelling and re-placing the order to fix the charge",
            verbatim="The quickest fix is to cancel the order and place it again.",
            paraphrase="The quickest fix is to scrap the purchase and buy it afresh.",
            negated="There's no need to cancel the order and place it again.",
        ),
        wrong="If both charges post, we refund the duplicate as store credit.",
        wrong_replaces=2,
        extra="Your banking app usually marks a pending authorization as pending or processing.",
    ),
    Topic(
        slice="billing_payments",
        slug="price-adjustment",
        questions=(
            "The sofa I bought last week is now cheaper. Can I get the difference back?",
            "Do you refund the difference if something goes on sale after I buy it?",
            "The price dropped right after my order. Any chance of a partial refund?",
        ),
        evidence=("pol-bill-02",),
        concepts=(
            _c("price adjustment", "the customer can request a one-time price adjustment",
               "Yes, you can request a one-time price adjustment.",
               "Yes, you can ask for the difference back once.", "the difference back once", "plain-language"),
            _c("14 days", "the drop must happen within 14 days of purchase",
               "The drop has to happen within 14 days of purchase.",
               "The drop has to happen within two weeks of purchase.", "two weeks", "plain-language"),
            _c("flash-sale", "flash-sale prices are excluded",
               "Flash-sale prices are excluded."),
        ),
        claim=Claim(
            "any price drop", "adjustments apply to any price drop, at any time",
            verbatim="We'll match any price drop, however long ago you bought it.",
            paraphrase="We'll give you the difference whenever the price falls, no matter how long ago you bought it.",
            negated="We don't match any price drop after the 14-day window, though.",
        ),
        wrong="Price adjustments apply to purchases from the last 90 days.",
        wrong_replaces=1,
        extra="Just send us the order number and a link to the new price.",
        specials=(
            Special("ambiguous",
                    "If the price has dropped recently, let us know and we can usually adjust it once. Some sale prices don't qualify.",
                    "review_required",
                    "'Recently' neither states nor contradicts the 14-day limit, and 'some sale prices' may or may not mean the flash-sale exclusion; the notes cannot settle it."),
            Special("false-reassurance",
                    "Yes, you can request a one-time price adjustment. Flash-sale prices are excluded. No stress: we'll match any price drop, however long ago you bought it.",
                    "fail",
                    "'No stress' is reassurance; the response promises adjustments for any price drop at any time and omits the 14-day limit."),
        ),
    ),
    Topic(
        slice="billing_payments",
        slug="vat-invoice",
        questions=(
            "I need a VAT invoice for my company. How do I get one?",
            "Can you post me an invoice with our business name on it?",
            "Where can I download a tax invoice for an order?",
        ),
        evidence=("pol-bill-03",),
        concepts=(
            _c("VAT invoice", "a VAT invoice can be downloaded from the Orders page",
               "You can download a VAT invoice for any order from the Orders page.",
               "You can download a tax invoice for any order from the Orders page.", "tax invoice", "synonym"),
            _c("company name", "the company name and VAT number can be added before download",
               "Add your company name and VAT number before downloading.",
               "Add your business name and VAT number before downloading.", "business name", "synonym"),
        ),
        claim=Claim(
            "mail you a copy", "offers to post a paper invoice",
            verbatim="I can also mail you a copy on company letterhead.",
            paraphrase="I'll have a printed version sent to your office address as well.",
            negated="We can't mail you a copy, but the PDF is an official invoice.",
            negated_after="I'd love to mail you a copy, but invoices are only issued as PDFs.",
        ),
        wrong="Invoices are emailed automatically within a month of each order.",
        wrong_replaces=0,
        extra="The PDF is accepted by most accounting systems as an official invoice.",
    ),
    Topic(
        slice="billing_payments",
        slug="failed-payment",
        questions=(
            "My membership payment failed. Will I be charged a late fee?",
            "What happens if my card declines for the Plus renewal?",
            "My Plus payment bounced. Do I lose my benefits straight away?",
        ),
        evidence=("pol-bill-04",),
        concepts=(
            _c("3 times over 7 days", "the payment is retried 3 times over 7 days",
               "We retry the payment 3 times over 7 days.",
               "We retry the payment three times over a week.", "three times over a week", "plain-language"),
            _c("no late fees", "there are no late fees",
               "There are no late fees.",
               "You won't be charged any penalty for the delay.", "any penalty", "plain-language"),
            _c("benefits pause", "if all retries fail, benefits pause (the membership is not cancelled)",
               "If all retries fail, your benefits pause until the payment goes through.",
               "If all retries fail, your perks are put on hold until the payment goes through.", "perks are put on hold", "plain-language"),
        ),
        claim=Claim(
            "cancelled immediately", "the membership is cancelled right away",
            verbatim="Your membership is cancelled immediately, so you'll need to rejoin.",
            paraphrase="Your membership ends on the spot, so you'll need to sign up again.",
            negated="Your membership isn't cancelled immediately, so there's no need to rejoin.",
        ),
        wrong="A late fee of $5 is added after the first failed attempt.",
        wrong_replaces=1,
        extra="Updating your card on the Membership page triggers a new attempt straight away.",
    ),
    Topic(
        slice="billing_payments",
        slug="chargeback",
        questions=(
            "Should I just file a chargeback with my bank for an order I never got?",
            "I'm thinking of disputing a charge with my card issuer. What happens?",
            "What happens to my account if I raise a chargeback?",
        ),
        evidence=("pol-bill-05",),
        concepts=(
            _c("contact support", "the customer is asked to contact support first",
               "Please contact support first so we can try to fix it quickly.",
               "Please reach out to us first so we can try to fix it quickly.", "reach out to us", "plain-language"),
            _c("refunded twice", "while a chargeback is open the order cannot be refunded twice",
               "While a chargeback is open, the order can't be refunded twice.",
               "While a card dispute is open, we can't also send you a refund from our side.", "can't also send you a refund", "plain-language"),
            _c("benefits are paused", "membership benefits are paused while it is open",
               "Your Plus benefits are paused until it's resolved."),
        ),
        claim=Claim(
            "close your account", "filing a chargeback closes the account permanently",
            verbatim="Filing one will close your account permanently.",
            paraphrase="Filing one means you'll be banned from shopping with us for good.",
            negated="Filing one won't close your account, but it does slow things down.",
        ),
        wrong="Filing a chargeback is the fastest route and has no effect on your order or membership.",
        wrong_replaces=0,
        extra="Most missing-order problems are solved within a couple of days once we hear from you.",
    ),
    Topic(
        slice="billing_payments",
        slug="payment-methods",
        questions=(
            "Can I pay cash when the delivery arrives?",
            "Do you offer cash on delivery?",
            "What payment options do you take?",
        ),
        evidence=("pol-bill-06",),
        concepts=(
            _c("major cards", "Tallowmere accepts major cards, PayPal and gift cards",
               "We accept major cards, PayPal and gift cards.",
               "We accept Visa, Mastercard, Amex, PayPal and gift cards.", "Visa, Mastercard, Amex", "plain-language"),
            _c("cash on delivery", "cash on delivery is not offered",
               "Cash on delivery isn't available.",
               "COD isn't available.", "COD", "abbreviation"),
        ),
        claim=Claim(
            "pay the driver", "the customer can pay the courier in cash",
            verbatim="You can also pay the driver in cash when it arrives.",
            paraphrase="Or just hand the courier the money at your door.",
            negated="You can't pay the driver directly, I'm afraid.",
        ),
        wrong="Instalments are available from any agent after checkout.",
        wrong_replaces=0,
        extra="Instalment plans are offered only at checkout through our partner lender.",
        specials=(
            Special("wrong-polarity",
                    "We accept major cards, PayPal and gift cards. Cash on delivery is also available in most areas for a small fee.",
                    "fail",
                    "The response names cash on delivery but says it is offered, the opposite of the policy."),
        ),
    ),
    # ----------------------------------------------------- subscription_cancellation
    Topic(
        slice="subscription_cancellation",
        slug="cancel-plus",
        questions=(
            "How do I cancel Tallowmere Plus?",
            "If I cancel my membership today, do I lose the benefits right away?",
            "I want to stop my Plus membership. What happens when I cancel?",
        ),
        evidence=("pol-sub-01",),
        concepts=(
            _c("Membership page", "Plus can be cancelled at any time from the Membership page",
               "You can cancel any time from the Membership page.",
               "You can cancel any time under Account > Your plan.", "Account > Your plan", "plain-language"),
            _c("end of the billing period", "cancellation takes effect at the end of the billing period",
               "The cancellation takes effect at the end of the billing period.",
               "The cancellation takes effect at the end of your billing cycle.", "end of your billing cycle", "synonym"),
            _c("benefits continue", "benefits continue until then",
               "Your benefits continue until then.",
               "You keep your perks until then.", "keep your perks", "plain-language"),
        ),
        claim=Claim(
            "refund for the rest of the month", "a monthly plan is refunded for the unused part of the period",
            verbatim="You'll also get a refund for the rest of the month.",
            paraphrase="We'll also pay you back for the days you don't use.",
            negated="There's no refund for the rest of the month on monthly plans.",
        ),
        wrong="Cancelling ends your membership and benefits immediately.",
        wrong_replaces=1,
        extra="You can rejoin at any time, and your order history stays in your account.",
        specials=(
            Special("ambiguous",
                    "You can cancel any time from the Membership page. Your benefits continue for the time you've already paid for.",
                    "review_required",
                    "'The time you've already paid for' may imply the end of the billing period, but the response never says when the cancellation takes effect; reviewers could not agree whether that is stated."),
        ),
    ),
    Topic(
        slice="subscription_cancellation",
        slug="annual-plan-refund",
        questions=(
            "My annual Plus plan renewed yesterday and I didn't mean to. Can I get my money back?",
            "Can I get a refund if I cancel my yearly membership halfway through?",
            "What refund do I get for cancelling an annual plan?",
        ),
        evidence=("pol-sub-02",),
        concepts=(
            _c("14 days", "an annual plan cancelled within 14 days of renewal gets a full refund",
               "If you cancel within 14 days of the renewal date, you get a full refund.",
               "If you cancel within two weeks of the renewal date, you get a full refund.", "two weeks", "plain-language"),
            _c("end of the membership year", "after that, access continues until the end of the membership year",
               "After that, you keep access until the end of the membership year.",
               "After that, you keep access until the end of the plan year.", "plan year", "synonym"),
        ),
        claim=Claim(
            "prorated refund", "a prorated refund is paid after the 14 days",
            verbatim="After that, we'll send a prorated refund for the unused months.",
            paraphrase="After that, we'll pay back whatever portion of the year you haven't used.",
            negated="After 14 days there's no prorated refund, I'm afraid.",
            negated_after="A prorated refund after 14 days isn't something we offer.",
            abbreviated="After that, we'll send a pro-rata refund for the unused months.",
            abbreviated_term="pro-rata refund",
        ),
        wrong="Annual plans can be refunded in full at any point in the year.",
        wrong_replaces=0,
        extra="Cancelling from the Membership page also turns off the next automatic renewal.",
    ),
    Topic(
        slice="subscription_cancellation",
        slug="free-trial",
        questions=(
            "Will I be charged when my Plus free trial ends?",
            "Does the free trial turn into a paid membership automatically?",
            "How do I avoid paying after the trial?",
        ),
        evidence=("pol-sub-03",),
        concepts=(
            _c("converts to a paid plan", "the 30-day trial converts to a paid plan automatically",
               "The 30-day free trial converts to a paid plan automatically.",
               "The 30-day free trial rolls into a paid membership automatically.", "rolls into a paid membership", "plain-language"),
            _c("before the trial ends", "to avoid the charge, cancel before the trial ends",
               "To avoid the charge, cancel before the trial ends.",
               "To avoid the charge, cancel before the trial period is up.", "before the trial period is up", "plain-language"),
            _c("3 days before", "a reminder email is sent 3 days before conversion",
               "We'll send a reminder email 3 days before it converts.",
               "We'll send a reminder email three days before it converts.", "three days", "synonym"),
        ),
        claim=Claim(
            "refunded automatically", "the first charge is refunded automatically if the customer cancels later",
            verbatim="If you forget, the first charge is refunded automatically when you cancel.",
            paraphrase="If you forget, just cancel afterwards and the first payment comes straight back to you.",
            negated="If you forget, the first charge isn't refunded automatically, so it's worth setting a reminder.",
        ),
        wrong="The trial simply ends and nothing is charged unless you opt in.",
        wrong_replaces=0,
        extra="You can see the exact conversion date on the Membership page.",
    ),
    Topic(
        slice="subscription_cancellation",
        slug="pause-membership",
        questions=(
            "Can I pause my Plus membership while I'm travelling?",
            "Is there a way to put my membership on hold for a few months?",
            "I don't need Plus over the summer. Can I freeze it?",
        ),
        evidence=("pol-sub-04",),
        concepts=(
            _c("3 months", "Plus can be paused for up to 3 months",
               "You can pause Plus for up to 3 months.",
               "You can pause Plus for up to three months.", "three months", "synonym"),
            _c("once per membership year", "pausing is available once per membership year",
               "Pausing is available once per membership year.",
               "Pausing is available once per plan year.", "plan year", "synonym"),
            _c("no charges", "no charges are taken while paused",
               "No charges are taken while it's paused.",
               "You won't be billed while it's paused.", "won't be billed", "plain-language"),
        ),
        claim=Claim(
            "as often as you like", "the membership can be paused any number of times",
            verbatim="You can pause as often as you like.",
            paraphrase="There's no limit on how many times you put it on hold.",
            negated="You can't pause as often as you like, since it's once a year.",
        ),
        wrong="You can pause for up to a year at a time.",
        wrong_replaces=0,
        extra="Your benefits come back automatically when the pause ends.",
    ),
    Topic(
        slice="subscription_cancellation",
        slug="plan-switch",
        questions=(
            "If I switch from monthly to annual Plus, when does it change?",
            "Can I move to the yearly plan today?",
            "How does changing my Plus plan from annual to monthly work?",
        ),
        evidence=("pol-sub-05",),
        concepts=(
            _c("next renewal date", "plan changes take effect at the next renewal date",
               "Plan changes take effect at your next renewal date.",
               "Plan changes take effect when your membership next renews.", "when your membership next renews", "plain-language"),
            _c("Membership page", "the switch is scheduled from the Membership page",
               "You can schedule the switch from the Membership page.",
               "You can schedule the switch under Account > Your plan.", "Account > Your plan", "plain-language"),
        ),
        claim=Claim(
            "takes effect immediately", "the switch takes effect at once",
            verbatim="The switch takes effect immediately and we'll credit the difference.",
            paraphrase="The switch happens the moment you click, and we'll credit the difference.",
            negated="It never takes effect immediately, so you won't be charged twice.",
        ),
        wrong="The new plan starts today and the old one is refunded pro rata.",
        wrong_replaces=0,
        extra="Your benefits carry on without a gap while the switch is scheduled.",
    ),
    Topic(
        slice="subscription_cancellation",
        slug="plus-refund-window",
        questions=(
            "Does Plus give me a longer return window?",
            "As a Plus member, do I get extra time to return things?",
            "Is the refund window different for Plus members?",
        ),
        evidence=("pol-sub-06", "pol-ref-01"),
        concepts=(
            _c("30 days", "Plus members have the same 30-day refund window as everyone",
               "Plus members have the same refund window as everyone: 30 days from delivery.",
               "Plus members have the same refund window as everyone: thirty days from delivery.", "thirty days", "synonym"),
            _c("free standard shipping", "Plus includes free standard shipping and early sale access",
               "Plus does include free standard shipping and early sale access.",
               "Plus does include free std shipping and early sale access.", "std shipping", "abbreviation"),
        ),
        claim=Claim(
            "60 days", "Plus extends the refund window",
            verbatim="Plus members get 60 days to return items.",
            paraphrase="Plus members get twice as long as everyone else to send things back.",
            negated="Plus doesn't extend it to 60 days or anything like that.",
        ),
        wrong="Plus members get an extended refund window on every order.",
        wrong_replaces=0,
        extra="Early sale access usually opens a day before the public sale.",
    ),
    # --------------------------------------------------------- privacy_data_requests
    Topic(
        slice="privacy_data_requests",
        slug="data-export",
        questions=(
            "How can I get a copy of all the data you hold about me?",
            "I'd like to download my personal data. How?",
            "Can I request an export of my account information?",
        ),
        evidence=("pol-priv-01",),
        concepts=(
            _c("Privacy Center", "the request is made from the Privacy Center",
               "You can request it from the Privacy Center in your account.",
               "You can request it from the Privacy Centre in your account.", "Privacy Centre", "spelling-variant"),
            _c("identity verification", "identity verification is required",
               "We'll ask for identity verification first.",
               "We'll run a quick ID check first.", "ID check", "abbreviation"),
            _c("30 days", "the export is delivered within 30 days",
               "The export is delivered within 30 days.",
               "The export is delivered within 30 calendar days.", "30 calendar days", "plain-language"),
        ),
        claim=Claim(
            "email it to you today", "the agent will send the data directly from chat",
            verbatim="I can email it to you today if you confirm your address.",
            paraphrase="Confirm your address and I'll send the whole file across this afternoon.",
            negated="I can't email it to you today from chat, but the request only takes a minute.",
        ),
        wrong="Exports are sent instantly once you click Download.",
        wrong_replaces=2,
        extra="The export arrives as a ZIP file with your orders, addresses and preferences.",
    ),
    Topic(
        slice="privacy_data_requests",
        slug="account-deletion",
        questions=(
            "Please delete my account and all my data.",
            "If I delete my account, is everything erased?",
            "How do I get Tallowmere to erase my information?",
        ),
        evidence=("pol-priv-02",),
        concepts=(
            _c("30 days", "the deletion request is completed within 30 days",
               "Your deletion request is completed within 30 days.",
               "Your deletion request is completed within thirty days.", "thirty days", "synonym"),
            _c("cannot be undone", "deletion cannot be undone",
               "Once done, it cannot be undone.",
               "Once done, it's permanent.", "permanent", "plain-language"),
            _c("7 years", "order and invoice records are kept for 7 years for tax law",
               "Order and invoice records are kept for 7 years because tax law requires it.",
               "Order and invoice records are kept for 7 yrs because tax law requires it.", "7 yrs", "abbreviation"),
        ),
        claim=Claim(
            "erase everything", "all records, including orders and invoices, are erased",
            verbatim="We'll erase everything, including your order history and invoices.",
            paraphrase="Every trace of you, down to the last receipt, will be wiped from our systems.",
            negated="We can't erase everything, because order and invoice records have to stay.",
            negated_after="Erase everything? Order and invoice records have to stay, so that part isn't possible.",
        ),
        wrong="Deletion is immediate, and you can restore the account within a year if you change your mind.",
        wrong_replaces=1,
        extra="You can start the request from the Privacy Center.",
        specials=(
            Special("ambiguous",
                    "Your deletion request is completed within 30 days and cannot be undone. We keep order and invoice records only for as long as tax law requires.",
                    "review_required",
                    "'As long as tax law requires' may be an acceptable statement of the 7-year retention or an omission of it; the notes do not say whether the period must be named."),
        ),
    ),
    Topic(
        slice="privacy_data_requests",
        slug="marketing-opt-out",
        questions=(
            "How do I stop your marketing emails?",
            "I unsubscribed but I'm still getting emails from you. Why?",
            "Can I opt out of promotional emails but still get order updates?",
        ),
        evidence=("pol-priv-03",),
        concepts=(
            _c("unsubscribe", "use the unsubscribe link in any email or account settings",
               "Use the unsubscribe link in any email, or change it in your account settings.",
               "Use the opt-out link in any email, or change it in your account settings.", "opt-out", "synonym"),
            _c("10 business days", "the change can take up to 10 business days",
               "It can take up to 10 business days to take effect.",
               "It can take up to 10 biz days to take effect.", "10 biz days", "abbreviation"),
            _c("order and security emails", "order and security emails continue",
               "Order and security emails will still arrive.",
               "Transactional emails like receipts and sign-in alerts will still arrive.", "transactional emails", "plain-language"),
        ),
        claim=Claim(
            "stop immediately", "marketing stops the moment the customer unsubscribes",
            verbatim="Marketing emails will stop immediately once you click the link.",
            paraphrase="The very next campaign won't reach you once you've clicked.",
            negated="Marketing emails won't stop immediately, so a couple more may arrive.",
        ),
        wrong="Unsubscribing also stops order confirmations, so keep an eye on the Orders page.",
        wrong_replaces=2,
        extra="You can choose which topics you hear about in the same settings page.",
        specials=(
            Special("ambiguous",
                    "Use the unsubscribe link in any email, or change it in your account settings. It can take up to 10 days to take effect, and order and security emails will still arrive.",
                    "review_required",
                    "'Up to 10 days' could be read as the 10-business-day period or as a shorter, calendar-day promise; the notes cannot settle which."),
        ),
    ),
    Topic(
        slice="privacy_data_requests",
        slug="third-party-disclosure",
        questions=(
            "My husband placed an order on his account. Can you tell me what he bought?",
            "I'm calling for my mum. Can you read me her recent orders?",
            "Can you share my son's order status with me? I paid for it.",
        ),
        evidence=("pol-priv-04",),
        concepts=(
            _c("account holder", "order details are shared only with the account holder",
               "I can only share order details with the account holder.",
               "I can only share order details with the person who owns the account.", "the person who owns the account", "plain-language"),
            _c("written authorization", "with the account holder's written authorization the agent can help",
               "If they give us written authorization, I can help you directly.",
               "If they give us written authorisation, I can help you directly.", "authorisation", "spelling-variant"),
        ),
        claim=Claim(
            "just this once", "the agent discloses the information as an exception",
            verbatim="Since you're family, I can share it just this once.",
            paraphrase="Since you're family, I'll make an exception and read them out to you.",
            negated="Even for family, I can't share it just this once without their okay.",
        ),
        wrong="Family members at the same address can see each other's orders on request.",
        wrong_replaces=0,
        extra="The account holder can also track the order and forward the email themselves.",
    ),
    Topic(
        slice="privacy_data_requests",
        slug="data-sharing",
        questions=(
            "Do you sell my data to advertisers?",
            "Who do you share my personal information with?",
            "Is my data passed to other companies?",
        ),
        evidence=("pol-priv-05",),
        concepts=(
            _c("personal data", "Tallowmere does not sell personal data",
               "Tallowmere does not sell your personal data.",
               "Tallowmere does not sell your PII.", "PII", "abbreviation"),
            _c("payment processors", "it is shared only with carriers, payment processors and service providers as needed",
               "We share it only with carriers, payment processors and service providers that need it to fulfil your order.",
               "We share it only with couriers, card companies and other vendors that need it to fulfil your order.",
               "card companies", "plain-language"),
        ),
        claim=Claim(
            "advertising partners", "data is shared with or sold to advertisers",
            verbatim="We also pass some details to advertising partners to personalise offers.",
            paraphrase="We also let a few marketing companies use your details so they can tailor ads to you.",
            negated="We don't give anything to advertising partners.",
        ),
        wrong="Like most retailers, we sell anonymised shopping data to trusted brands.",
        wrong_replaces=0,
        extra="You can read the full list of service providers in our privacy notice.",
    ),
    Topic(
        slice="privacy_data_requests",
        slug="privacy-contact",
        questions=(
            "Who can I contact about how my personal data is used?",
            "I have a complaint about how you handled my data. Who do I talk to?",
            "Is there a privacy officer I can email?",
        ),
        evidence=("pol-priv-06",),
        concepts=(
            _c("data protection officer", "questions go to the data protection officer",
               "You can write to our data protection officer at privacy@tallowmere.example.",
               "You can write to our DPO at privacy@tallowmere.example.", "DPO", "abbreviation"),
            _c("data protection authority", "the customer may also complain to their data protection authority",
               "You can also complain to your data protection authority.",
               "You can also complain to your national privacy regulator.", "national privacy regulator", "plain-language"),
        ),
        claim=Claim(
            "only through us", "privacy complaints may be handled only by Tallowmere",
            verbatim="Privacy complaints have to go only through us.",
            paraphrase="There's no point going to any outside body, because we're the final word on privacy complaints.",
            negated="Complaints don't have to go only through us.",
        ),
        wrong="The best contact is our general support chat, as we don't have a dedicated privacy officer.",
        wrong_replaces=0,
        extra="Include your account email so the team can find your records quickly.",
    ),
    # ------------------------------------------------------------- shipping_delivery
    Topic(
        slice="shipping_delivery",
        slug="delivery-times",
        questions=(
            "How long does standard delivery take?",
            "If I order today, when will it arrive?",
            "What's the difference between standard and express shipping times?",
        ),
        evidence=("pol-ship-01",),
        concepts=(
            _c("3-5 business days", "standard shipping takes 3-5 business days",
               "Standard shipping takes 3-5 business days.",
               "Standard shipping takes 3-5 biz days.", "biz days", "abbreviation"),
            _c("1-2 business days", "express takes 1-2 business days",
               "Express takes 1-2 business days.",
               "Express takes 1-2 working days.", "working days", "synonym"),
            _c("before 2 pm", "orders placed before 2 pm on a business day ship the same day",
               "Orders placed before 2 pm on a business day ship the same day.",
               "Orders placed before 14:00 on a business day ship the same day.", "14:00", "plain-language"),
        ),
        claim=Claim(
            "guaranteed next-day", "delivery is guaranteed for the next day",
            verbatim="Every order also comes with guaranteed next-day delivery.",
            paraphrase="Whatever you order, it'll be at your door tomorrow, I promise.",
            negated="We don't offer guaranteed next-day delivery.",
            negated_after="Guaranteed next-day delivery isn't something we offer.",
        ),
        wrong="Standard shipping usually arrives the next day.",
        wrong_replaces=0,
        extra="You'll see the estimated delivery date at checkout before you pay.",
    ),
    Topic(
        slice="shipping_delivery",
        slug="address-change",
        questions=(
            "I put the wrong address on my order. Can I change it?",
            "Can you update the delivery address for an order I placed this morning?",
            "My order is already packed. Can it still go to a different address?",
        ),
        evidence=("pol-ship-02",),
        concepts=(
            _c("packed", "the address can be changed only before the order status becomes Packed",
               "The address can be changed only before the order status becomes Packed.",
               "The address can be changed only until we start preparing your parcel.", "until we start preparing your parcel", "plain-language"),
            _c("carrier redirect", "after that a carrier redirect can be requested but is not guaranteed",
               "After that, you can ask for a carrier redirect, but it isn't guaranteed.",
               "After that, you can ask the courier to reroute it, but it isn't guaranteed.", "ask the courier to reroute it", "plain-language"),
        ),
        claim=Claim(
            "always be changed", "the address can be changed at any point before delivery",
            verbatim="The address can always be changed right up to delivery.",
            paraphrase="You can update where it goes at any point until it's on your doorstep.",
            negated="The address can't always be changed once it's on its way.",
        ),
        wrong="Address changes are possible at any stage through the Orders page.",
        wrong_replaces=0,
        extra="You can check the current status on the Orders page.",
        specials=(
            Special("ambiguous",
                    "The address can usually be changed while the order is still being processed. After that, you can ask for a carrier redirect, but it isn't guaranteed.",
                    "review_required",
                    "'While the order is still being processed' may or may not correspond to 'before the status becomes Packed'; the notes do not define processing."),
        ),
    ),
    Topic(
        slice="shipping_delivery",
        slug="lost-parcel",
        questions=(
            "My tracking hasn't updated in over a week. Is my parcel lost?",
            "What do I do if my package seems to be lost?",
            "Tracking has been stuck for days. Can I get a replacement?",
        ),
        evidence=("pol-ship-03",),
        concepts=(
            _c("7 business days", "a lost-parcel claim can be opened after 7 business days without movement",
               "If tracking shows no movement for 7 business days, you can open a lost-parcel claim.",
               "If tracking shows no movement for 7 working days, you can open a lost-parcel claim.", "7 working days", "synonym"),
            _c("carrier investigation", "a replacement or refund follows the carrier investigation",
               "A replacement or refund follows the carrier investigation.",
               "A replacement or refund follows once the courier has looked into it.", "once the courier has looked into it", "plain-language"),
            _c("10 business days", "the investigation takes up to 10 business days",
               "The investigation takes up to 10 business days.",
               "The investigation takes up to 10 biz days.", "10 biz days", "abbreviation"),
        ),
        claim=Claim(
            "send a replacement today", "the agent ships a replacement before the investigation",
            verbatim="I can send a replacement today without waiting for the carrier.",
            paraphrase="I'll ship you a new one this afternoon, so there's no need to wait on the courier.",
            negated="I can't send a replacement today, but the claim gets things moving.",
        ),
        wrong="Parcels are declared lost after 48 hours without a scan.",
        wrong_replaces=0,
        extra="You can open the claim from the Orders page.",
    ),
    Topic(
        slice="shipping_delivery",
        slug="customs-duties",
        questions=(
            "Will I have to pay customs on an order shipped to Canada?",
            "Are import taxes included in the price for international orders?",
            "Why did the courier ask me for a duty payment?",
        ),
        evidence=("pol-ship-04",),
        concepts=(
            _c("customs duties", "customs duties and import taxes are paid by the recipient",
               "Customs duties and import taxes are paid by the recipient.",
               "Import duties and taxes are paid by the recipient.", "import duties", "synonym"),
            _c("not included", "they are not included in the order total",
               "They're not included in the order total.",
               "They come on top of the order total.", "on top of the order total", "plain-language"),
        ),
        claim=Claim(
            "duty-free", "international orders ship free of duties",
            verbatim="All our international orders ship duty-free.",
            paraphrase="You won't owe anything extra at the border on any of our parcels.",
            negated="Our international orders don't ship duty-free.",
        ),
        wrong="Any customs charges are already included in the order total.",
        wrong_replaces=1,
        extra="The amount depends on your country's rules and the value of the order.",
    ),
    Topic(
        slice="shipping_delivery",
        slug="delivered-not-received",
        questions=(
            "Tracking says my parcel was delivered but it's not here.",
            "The app says delivered, but I never got anything.",
            "What happens if my package shows as delivered but I can't find it?",
        ),
        evidence=("pol-ship-05",),
        concepts=(
            _c("48 hours", "wait 48 hours, as parcels are sometimes marked delivered early",
               "Please wait 48 hours, as parcels are sometimes marked delivered early.",
               "Please wait 48 hrs, as parcels are sometimes marked delivered early.", "48 hrs", "abbreviation"),
            _c("neighbours", "check with neighbours",
               "It's worth checking with neighbours and around your building.",
               "It's worth checking with neighbors and around your building.", "neighbors", "spelling-variant"),
            _c("carrier investigation", "then report it and a carrier investigation is opened",
               "If it still hasn't turned up, report it and we'll open a carrier investigation.",
               "If it still hasn't turned up, report it and we'll get the courier to look into it.", "get the courier to look into it", "plain-language"),
        ),
        claim=Claim(
            "refund you now", "the agent refunds before any investigation",
            verbatim="Or, if you prefer, I can refund you now and skip the wait.",
            paraphrase="Or I can put the money back on your card straight away so you don't have to wait.",
            negated="I can't refund you now, but the investigation is usually quick.",
        ),
        wrong="Parcels marked delivered are the customer's responsibility, so there's nothing more we can do.",
        wrong_replaces=2,
        extra="Couriers sometimes leave parcels in a safe place, so check porches and bins too.",
    ),
    Topic(
        slice="shipping_delivery",
        slug="tracking-number",
        questions=(
            "Where do I find my tracking number?",
            "I haven't received any tracking info for my order. Where is it?",
            "How can I track my parcel?",
        ),
        evidence=("pol-ship-06",),
        concepts=(
            _c("tracking number", "the tracking number is emailed when the order ships",
               "Your tracking number is emailed when the order ships.",
               "Your tracking no. is emailed when the order ships.", "tracking no.", "abbreviation"),
            _c("Orders page", "it also appears on the Orders page",
               "It also appears on the Orders page.",
               "It also shows up under My Orders in your account.", "My Orders", "plain-language"),
        ),
        claim=Claim(
            "before it ships", "a tracking number can be given before the order ships",
            verbatim="I can also give you a tracking number before it ships.",
            paraphrase="I can give you the courier reference right now, even though the parcel hasn't left yet.",
            negated="There isn't a tracking number before it ships, so nothing is missing yet.",
        ),
        wrong="Tracking details are sent by text message only, a day after delivery.",
        wrong_replaces=0,
        extra="Most orders placed before 2 pm ship the same business day.",
    ),
    # ------------------------------------------------------------ escalation_handoff
    Topic(
        slice="escalation_handoff",
        slug="manager-request",
        questions=(
            "I want to speak to a manager.",
            "Can you escalate this? I'm not happy with the answer.",
            "Put me through to someone senior, please.",
        ),
        evidence=("pol-esc-01",),
        concepts=(
            _c("Tier 2", "the agent offers escalation to Tier 2 support",
               "I can escalate this to our Tier 2 support team.",
               "I can escalate this to our T2 support team.", "T2", "abbreviation"),
            _c("1 business day", "Tier 2 replies within 1 business day",
               "They reply within 1 business day.",
               "They reply within 1 working day.", "1 working day", "synonym"),
            _c("particular outcome", "escalation does not guarantee a particular outcome",
               "Escalating doesn't guarantee a particular outcome, but they'll review everything.",
               "Escalating doesn't promise a specific result, but they'll review everything.", "a specific result", "plain-language"),
        ),
        claim=Claim(
            "guarantee a refund", "a manager will guarantee a refund",
            verbatim="A manager will guarantee a refund once they see this.",
            paraphrase="Once a manager sees this, getting your money back is a sure thing.",
            negated="I can't guarantee a refund, but they'll look at your case fairly.",
        ),
        wrong="Managers don't take chats, but I can pass on a note to them.",
        wrong_replaces=0,
        extra="I'll add a summary of our conversation so you don't have to repeat yourself.",
    ),
    Topic(
        slice="escalation_handoff",
        slug="formal-complaint",
        questions=(
            "How do I make a formal complaint?",
            "I want to lodge an official complaint about my order.",
            "What's the complaints process and how long does it take?",
        ),
        evidence=("pol-esc-02",),
        concepts=(
            _c("reference number", "the complaint gets a reference number",
               "You'll get a reference number for your complaint.",
               "You'll get a ref no. for your complaint.", "ref no.", "abbreviation"),
            _c("2 business days", "it is acknowledged within 2 business days",
               "We acknowledge it within 2 business days.",
               "We acknowledge it within 2 biz days.", "2 biz days", "abbreviation"),
            _c("14 days", "a final response follows within 14 days",
               "You'll get a final response within 14 days.",
               "You'll get a final response within a fortnight.", "a fortnight", "plain-language"),
        ),
        claim=Claim(
            "automatic compensation", "formal complaints come with compensation",
            verbatim="Every formal complaint also comes with automatic compensation.",
            paraphrase="Everyone who complains formally gets a little something credited to their account.",
            negated="Complaints don't come with automatic compensation.",
        ),
        wrong="Complaints are answered within 60 days.",
        wrong_replaces=2,
        extra="You can submit it through the Help page or by replying to this chat.",
        specials=(
            Special("ambiguous",
                    "You'll get a reference number for your complaint. We acknowledge it within 2 business days and aim to send a final response within 14 days.",
                    "review_required",
                    "'Aim to' turns the 14-day commitment into a target; the notes do not say whether a hedged commitment states the concept."),
        ),
    ),
    Topic(
        slice="escalation_handoff",
        slug="safety-report",
        questions=(
            "The kettle I bought sparked and burned my hand.",
            "A shelf from your store collapsed and hurt my son. What do I do?",
            "I think one of your heaters is a fire hazard; it got really hot and smoked.",
        ),
        evidence=("pol-esc-03",),
        concepts=(
            _c("Product Safety team", "the report goes to the Product Safety team immediately",
               "I'm passing this to our Product Safety team right away.",
               "I'm passing this to our product-safety specialists right away.", "product-safety specialists", "plain-language"),
            _c("stop using", "the customer is asked to stop using the product",
               "Please stop using the product in the meantime.",
               "Please don't use it again in the meantime.", "don't use it again", "plain-language"),
        ),
        claim=Claim(
            "our fault", "admits liability",
            verbatim="This is clearly our fault and we'll cover any medical costs.",
            paraphrase="We take full responsibility for your injury and will pay for any treatment.",
            negated="I can't say whether it's our fault yet, but the team will look at it closely.",
        ),
        wrong="These things happen occasionally; you can simply return it for a refund within 30 days.",
        wrong_replaces=0,
        extra="If anyone needs medical attention, please seek it first.",
    ),
    Topic(
        slice="escalation_handoff",
        slug="goodwill-credit",
        questions=(
            "After all this hassle, can you give me some compensation?",
            "Can I get a voucher for the trouble with my order?",
            "Will you credit my account for the delay?",
        ),
        evidence=("pol-esc-04",),
        concepts=(
            _c("Tier 2", "only Tier 2 can issue goodwill credits",
               "Goodwill credits can only be issued by our Tier 2 team.",
               "Goodwill credits can only be issued by our T2 team.", "T2", "abbreviation"),
            _c("$20", "the cap is $20 per order",
               "They can add up to $20 per order.",
               "They can add up to twenty dollars per order.", "twenty dollars", "synonym"),
        ),
        claim=Claim(
            "credit your account now", "the front-line agent applies compensation",
            verbatim="I'll credit your account now with $50 for the trouble.",
            paraphrase="I've just added fifty dollars to your balance to make up for it.",
            negated="I can't credit your account now myself, but I can ask them.",
        ),
        wrong="Any agent can add a goodwill voucher of up to $100.",
        wrong_replaces=1,
        extra="I'll include the details of what went wrong so they have the full picture.",
        specials=(
            Special("ambiguous",
                    "Goodwill credits can only be issued by our Tier 2 team, who can usually add a credit of around $20 per order.",
                    "review_required",
                    "'Around $20' may restate the $20 cap or imply more is possible; the notes do not say whether the cap must be stated as a maximum."),
        ),
    ),
    Topic(
        slice="escalation_handoff",
        slug="human-handoff",
        questions=(
            "I want to talk to a real person, not a bot.",
            "Is there a human I can chat with?",
            "Can you connect me to an agent? It's 10 pm.",
        ),
        evidence=("pol-esc-05",),
        concepts=(
            _c("human agent", "the assistant can hand over to a human agent",
               "I can hand you over to a human agent.",
               "I can hand you over to a member of our team.", "a member of our team", "plain-language"),
            _c("8 am-8 pm", "humans are available 8 am-8 pm, Monday to Saturday",
               "They're available 8 am-8 pm, Monday to Saturday.",
               "They're available 08:00-20:00, Monday to Saturday.", "08:00-20:00", "plain-language"),
            _c("next business day", "outside those hours the customer can leave a message and gets a reply the next business day",
               "Outside those hours, leave a message and you'll get a reply the next business day.",
               "Outside those hours, leave a message and you'll get a reply the next working day.", "next working day", "synonym"),
        ),
        claim=Claim(
            "24/7", "human agents are available around the clock",
            verbatim="Our human team is on hand 24/7, so someone will pick up right away.",
            paraphrase="There's always a person on shift, day or night, so someone will pick up right away.",
            negated="Our human team isn't available 24/7, but they're quick during opening hours.",
            negated_after="24/7 human support isn't something we have, though.",
        ),
        wrong="Human agents are only reachable by email.",
        wrong_replaces=0,
        extra="I'll pass along our conversation so far so you don't need to repeat anything.",
    ),
)
