"""Outbound messages: email and SMS queued in the caller's transaction and sent by a job (messages/service.py)."""
