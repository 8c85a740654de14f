"""What onboarding's endpoints, its hosted page (onboarding/page/) and its jobs call: verifications,
beneficial owners, documents and their files, KYC links, and the streaming multipart parser. The work is
done in the modules named beside each group; callers import this module (and the requirement tables of
requirements.py, the states of state.py), not those."""

from __future__ import annotations

# Documents (documents.py): metadata checks, the rows, their files in the document store.
from platpay.onboarding.documents import METADATA_FIELDS as DOCUMENT_METADATA_FIELDS
from platpay.onboarding.documents import UPLOAD_FIELDS as DOCUMENT_UPLOAD_FIELDS
from platpay.onboarding.documents import check_replacement as check_document_replacement
from platpay.onboarding.documents import check_upload as check_document_upload
from platpay.onboarding.documents import content as document_content
from platpay.onboarding.documents import create as create_document
from platpay.onboarding.documents import delete as delete_document
from platpay.onboarding.documents import discard_files as discard_document_files
from platpay.onboarding.documents import ensure_changeable as ensure_document_changeable
from platpay.onboarding.documents import get as get_document
from platpay.onboarding.documents import list_of_customer as list_customer_documents
from platpay.onboarding.documents import list_page as list_documents
from platpay.onboarding.documents import metadata_problems as document_metadata_problems
from platpay.onboarding.documents import read_file as read_document_file
from platpay.onboarding.documents import replace as replace_document
from platpay.onboarding.documents import to_schema as document_schema

# KYC links (links.py): created by the platform, opened and used by the hosted page.
from platpay.onboarding.links import PAGE_PATH, LinkState, open_link
from platpay.onboarding.links import create as create_link
from platpay.onboarding.links import use as use_link

# Beneficial owners (owners.py) and their reviews.
from platpay.onboarding.owners import REVIEW_OWNER_JOB
from platpay.onboarding.owners import create as create_owner
from platpay.onboarding.owners import get as get_owner
from platpay.onboarding.owners import list_page as list_owners
from platpay.onboarding.owners import record_review as record_owner_review
from platpay.onboarding.owners import review_subject_of as owner_review_subject
from platpay.onboarding.owners import to_schema as owner_schema
from platpay.onboarding.owners import update as update_owner

# Multipart forms carrying files (uploads.py), streamed to the document store as they arrive.
from platpay.onboarding.uploads import ParsedForm
from platpay.onboarding.uploads import parse as parse_form

# Verifications (verifications.py): what a customer lacks, submission, the provider's review, a person's
# decision of a manual review (decide_review: POST /verifications/{id}/decision and the web console).
from platpay.onboarding.verifications import REVIEW_JOB as REVIEW_VERIFICATION_JOB
from platpay.onboarding.verifications import count_awaiting_review
from platpay.onboarding.verifications import decide as decide_review
from platpay.onboarding.verifications import get as get_verification
from platpay.onboarding.verifications import list_page as list_verifications
from platpay.onboarding.verifications import missing as missing_for_verification
from platpay.onboarding.verifications import owner_subject as owner_review_request
from platpay.onboarding.verifications import record_review as record_verification_review
from platpay.onboarding.verifications import review_subjects as verification_review_subjects
from platpay.onboarding.verifications import submit as submit_verification
from platpay.onboarding.verifications import to_schema as verification_schema

__all__ = [
    "DOCUMENT_METADATA_FIELDS",
    "DOCUMENT_UPLOAD_FIELDS",
    "PAGE_PATH",
    "REVIEW_OWNER_JOB",
    "REVIEW_VERIFICATION_JOB",
    "LinkState",
    "ParsedForm",
    "check_document_replacement",
    "check_document_upload",
    "count_awaiting_review",
    "create_document",
    "create_link",
    "create_owner",
    "decide_review",
    "delete_document",
    "discard_document_files",
    "document_content",
    "document_metadata_problems",
    "document_schema",
    "ensure_document_changeable",
    "get_document",
    "get_owner",
    "get_verification",
    "list_customer_documents",
    "list_documents",
    "list_owners",
    "list_verifications",
    "missing_for_verification",
    "open_link",
    "owner_review_request",
    "owner_review_subject",
    "owner_schema",
    "parse_form",
    "read_document_file",
    "record_owner_review",
    "record_verification_review",
    "replace_document",
    "submit_verification",
    "update_owner",
    "use_link",
    "verification_review_subjects",
    "verification_schema",
]
