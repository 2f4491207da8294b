"""The EMAIL_ALERT handler: tell people how a run went (interface §10, S2.F).

The outcome comes from the tasks the alert watches (report.py); EMAIL_ON_STATUS decides whether to
send; the subject and body come from the task's templates (template.py); the message goes to the
relay of Orchestration.Email, or to the sendmail program (relay.py). Without an Email section the
message is written to `<project>/outbox/` and the task succeeds, so a project without a relay (the
demo, a laptop) still shows what would have been sent. A failed alert does not change the run's
status (Appendix B); a partial recipient refusal is a warning on a task that succeeds.
"""

from __future__ import annotations

from etl_craft.handlers.context import HandlerResult, TaskContext
from etl_craft.handlers.email_alert.relay import Letter, hand_over, refused_summary, sender_of
from etl_craft.handlers.email_alert.report import body_text, pipelines_report, read_report
from etl_craft.handlers.email_alert.template import parse_parameters, subject_line, substitute


def outbox_name(ctx: TaskContext) -> str:
    return f"{ctx.pipeline_code}-run{ctx.pipeline_run_id}-{ctx.task_code}-attempt{ctx.attempt_number}.eml"


def run(ctx: TaskContext) -> HandlerResult:
    alert = parse_parameters(ctx.task_code, ctx.parameters)
    report = read_report(ctx)
    outcome = report.outcome
    variables: list[tuple[str, str]] = [("EMAIL_OUTCOME", outcome)]
    if outcome not in alert.on_status:
        why = f"not sent: the outcome {outcome} is not in EMAIL_ON_STATUS ({'|'.join(alert.on_status)})"
        ctx.log.info("%s", why)
        return HandlerResult(variables=(*variables, ("EMAIL_NOT_SENT", why)))
    values = {
        "status": outcome,
        "pipeline_id": str(ctx.pipeline_run_id),  # documented as the run's id
        "pipeline_run_id": str(ctx.pipeline_run_id),
        "pipeline_code": ctx.pipeline_code,
        "task_code": ctx.task_code,
        "run_date": ctx.run_date.isoformat(),
        "error_message": report.error_message,
    }
    subject = subject_line(alert.template("SUBJECT", outcome) or "", values)
    opening = alert.template("BODY", outcome)
    pipelines = pipelines_report(ctx, alert.pipelines) if alert.pipelines else []
    body = body_text(ctx, report, substitute(opening, values) if opening else None, pipelines)
    sender, address = sender_of(ctx.config.orchestration.email)
    letter = Letter(
        sender=sender,
        sender_address=address,
        recipients=alert.recipients,
        subject=subject,
        body=body,
        extra_headers=(("X-Etl-Craft-Pipeline-Run-Id", str(ctx.pipeline_run_id)), ("X-Etl-Craft-Outcome", outcome)),
    )
    handover = hand_over(ctx.config, letter, outbox_name(ctx))
    variables += [("EMAIL_SUBJECT", subject), ("EMAIL_RELAY", handover.relay)]
    if handover.outbox_path is not None:
        ctx.log.info(
            "no relay is configured (Orchestration has no Email section), so the message was written to the outbox: %s",
            handover.outbox_path,
        )
        variables.append(("EMAIL_OUTBOX", str(handover.outbox_path)))
    delivered = [r for r in alert.recipients if r not in handover.refused]
    variables.append(("EMAIL_SENT_TO", ", ".join(delivered)))
    if not handover.refused:
        ctx.log.info("sent %r to %s through %s", subject, ", ".join(delivered), handover.relay)
        return HandlerResult(variables=tuple(variables))
    warning = refused_summary(handover.refused, alert.recipients)
    variables.append(("EMAIL_WARNING", warning))
    return HandlerResult(variables=tuple(variables), warnings=(warning,))
