-- Project migrations write metadata only: the guards refuse their writes to etl-craft's own tables.

DROP TRIGGER tr_aud_pipelines_run_log_guard_insert;
CREATE TRIGGER tr_aud_pipelines_run_log_guard_insert BEFORE INSERT ON AUD_PIPELINES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_pipelines_run_log_guard_update;
CREATE TRIGGER tr_aud_pipelines_run_log_guard_update BEFORE UPDATE ON AUD_PIPELINES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_pipelines_run_log_guard_delete;
CREATE TRIGGER tr_aud_pipelines_run_log_guard_delete BEFORE DELETE ON AUD_PIPELINES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_run_log_guard_insert;
CREATE TRIGGER tr_aud_task_run_log_guard_insert BEFORE INSERT ON AUD_TASK_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_run_log_guard_update;
CREATE TRIGGER tr_aud_task_run_log_guard_update BEFORE UPDATE ON AUD_TASK_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_run_log_guard_delete;
CREATE TRIGGER tr_aud_task_run_log_guard_delete BEFORE DELETE ON AUD_TASK_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_run_interventions_guard_insert;
CREATE TRIGGER tr_aud_run_interventions_guard_insert BEFORE INSERT ON AUD_RUN_INTERVENTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_run_interventions_guard_update;
CREATE TRIGGER tr_aud_run_interventions_guard_update BEFORE UPDATE ON AUD_RUN_INTERVENTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_run_interventions_guard_delete;
CREATE TRIGGER tr_aud_run_interventions_guard_delete BEFORE DELETE ON AUD_RUN_INTERVENTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_RUN_INTERVENTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_pipeline_pauses_guard_insert;
CREATE TRIGGER tr_aud_pipeline_pauses_guard_insert BEFORE INSERT ON AUD_PIPELINE_PAUSES
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft; pause and resume pipelines with etl-craft pause and etl-craft resume') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_pipeline_pauses_guard_update;
CREATE TRIGGER tr_aud_pipeline_pauses_guard_update BEFORE UPDATE ON AUD_PIPELINE_PAUSES
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft; pause and resume pipelines with etl-craft pause and etl-craft resume') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_pipeline_pauses_guard_delete;
CREATE TRIGGER tr_aud_pipeline_pauses_guard_delete BEFORE DELETE ON AUD_PIPELINE_PAUSES
BEGIN
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft; pause and resume pipelines with etl-craft pause and etl-craft resume') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_PIPELINE_PAUSES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_run_log_guard_insert;
CREATE TRIGGER tr_aud_business_rules_run_log_guard_insert BEFORE INSERT ON AUD_BUSINESS_RULES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_run_log_guard_update;
CREATE TRIGGER tr_aud_business_rules_run_log_guard_update BEFORE UPDATE ON AUD_BUSINESS_RULES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_run_log_guard_delete;
CREATE TRIGGER tr_aud_business_rules_run_log_guard_delete BEFORE DELETE ON AUD_BUSINESS_RULES_RUN_LOG
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RUN_LOG is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_results_guard_insert;
CREATE TRIGGER tr_aud_business_rules_results_guard_insert BEFORE INSERT ON AUD_BUSINESS_RULES_RESULTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_results_guard_update;
CREATE TRIGGER tr_aud_business_rules_results_guard_update BEFORE UPDATE ON AUD_BUSINESS_RULES_RESULTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_business_rules_results_guard_delete;
CREATE TRIGGER tr_aud_business_rules_results_guard_delete BEFORE DELETE ON AUD_BUSINESS_RULES_RESULTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_BUSINESS_RULES_RESULTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_offset_tracker_guard_insert;
CREATE TRIGGER tr_aud_task_offset_tracker_guard_insert BEFORE INSERT ON AUD_TASK_OFFSET_TRACKER
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_offset_tracker_guard_update;
CREATE TRIGGER tr_aud_task_offset_tracker_guard_update BEFORE UPDATE ON AUD_TASK_OFFSET_TRACKER
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_offset_tracker_guard_delete;
CREATE TRIGGER tr_aud_task_offset_tracker_guard_delete BEFORE DELETE ON AUD_TASK_OFFSET_TRACKER
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_OFFSET_TRACKER is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_column_lineage_guard_insert;
CREATE TRIGGER tr_aud_column_lineage_guard_insert BEFORE INSERT ON AUD_COLUMN_LINEAGE
BEGIN
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_column_lineage_guard_update;
CREATE TRIGGER tr_aud_column_lineage_guard_update BEFORE UPDATE ON AUD_COLUMN_LINEAGE
BEGIN
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_column_lineage_guard_delete;
CREATE TRIGGER tr_aud_column_lineage_guard_delete BEFORE DELETE ON AUD_COLUMN_LINEAGE
BEGIN
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_COLUMN_LINEAGE is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_docs_publication_guard_insert;
CREATE TRIGGER tr_aud_docs_publication_guard_insert BEFORE INSERT ON AUD_DOCS_PUBLICATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_docs_publication_guard_update;
CREATE TRIGGER tr_aud_docs_publication_guard_update BEFORE UPDATE ON AUD_DOCS_PUBLICATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_docs_publication_guard_delete;
CREATE TRIGGER tr_aud_docs_publication_guard_delete BEFORE DELETE ON AUD_DOCS_PUBLICATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DOCS_PUBLICATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_documentation_guard_insert;
CREATE TRIGGER tr_aud_task_documentation_guard_insert BEFORE INSERT ON AUD_TASK_DOCUMENTATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_documentation_guard_update;
CREATE TRIGGER tr_aud_task_documentation_guard_update BEFORE UPDATE ON AUD_TASK_DOCUMENTATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_documentation_guard_delete;
CREATE TRIGGER tr_aud_task_documentation_guard_delete BEFORE DELETE ON AUD_TASK_DOCUMENTATION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_DOCUMENTATION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_dependency_consumption_guard_insert;
CREATE TRIGGER tr_aud_dependency_consumption_guard_insert BEFORE INSERT ON AUD_DEPENDENCY_CONSUMPTION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_dependency_consumption_guard_update;
CREATE TRIGGER tr_aud_dependency_consumption_guard_update BEFORE UPDATE ON AUD_DEPENDENCY_CONSUMPTION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_dependency_consumption_guard_delete;
CREATE TRIGGER tr_aud_dependency_consumption_guard_delete BEFORE DELETE ON AUD_DEPENDENCY_CONSUMPTION
BEGIN
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_DEPENDENCY_CONSUMPTION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_schema_migrations_guard_insert;
CREATE TRIGGER tr_schema_migrations_guard_insert BEFORE INSERT ON SCHEMA_MIGRATIONS
BEGIN
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft; apply migrations with etl-craft migrate') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_schema_migrations_guard_update;
CREATE TRIGGER tr_schema_migrations_guard_update BEFORE UPDATE ON SCHEMA_MIGRATIONS
BEGIN
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft; apply migrations with etl-craft migrate') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_schema_migrations_guard_delete;
CREATE TRIGGER tr_schema_migrations_guard_delete BEFORE DELETE ON SCHEMA_MIGRATIONS
BEGIN
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft; apply migrations with etl-craft migrate') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'SCHEMA_MIGRATIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_attempts_guard_insert;
CREATE TRIGGER tr_aud_task_attempts_guard_insert BEFORE INSERT ON AUD_TASK_ATTEMPTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_attempts_guard_update;
CREATE TRIGGER tr_aud_task_attempts_guard_update BEFORE UPDATE ON AUD_TASK_ATTEMPTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_task_attempts_guard_delete;
CREATE TRIGGER tr_aud_task_attempts_guard_delete BEFORE DELETE ON AUD_TASK_ATTEMPTS
BEGIN
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_decisions_guard_insert;
CREATE TRIGGER tr_aud_gate_decisions_guard_insert BEFORE INSERT ON AUD_GATE_DECISIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_decisions_guard_update;
CREATE TRIGGER tr_aud_gate_decisions_guard_update BEFORE UPDATE ON AUD_GATE_DECISIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_decisions_guard_delete;
CREATE TRIGGER tr_aud_gate_decisions_guard_delete BEFORE DELETE ON AUD_GATE_DECISIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_DECISIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_actions_guard_insert;
CREATE TRIGGER tr_aud_actions_guard_insert BEFORE INSERT ON AUD_ACTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_actions_guard_update;
CREATE TRIGGER tr_aud_actions_guard_update BEFORE UPDATE ON AUD_ACTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_actions_guard_delete;
CREATE TRIGGER tr_aud_actions_guard_delete BEFORE DELETE ON AUD_ACTIONS
BEGIN
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ACTIONS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_target_hash_version_guard_insert;
CREATE TRIGGER tr_aud_target_hash_version_guard_insert BEFORE INSERT ON AUD_TARGET_HASH_VERSION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft; recompute hashes with etl-craft rehash') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_target_hash_version_guard_update;
CREATE TRIGGER tr_aud_target_hash_version_guard_update BEFORE UPDATE ON AUD_TARGET_HASH_VERSION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft; recompute hashes with etl-craft rehash') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_target_hash_version_guard_delete;
CREATE TRIGGER tr_aud_target_hash_version_guard_delete BEFORE DELETE ON AUD_TARGET_HASH_VERSION
BEGIN
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft; recompute hashes with etl-craft rehash') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_TARGET_HASH_VERSION is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_overseers_guard_insert;
CREATE TRIGGER tr_aud_overseers_guard_insert BEFORE INSERT ON AUD_OVERSEERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft; start and stop the overseer with etl-craft server') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_overseers_guard_update;
CREATE TRIGGER tr_aud_overseers_guard_update BEFORE UPDATE ON AUD_OVERSEERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft; start and stop the overseer with etl-craft server') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_overseers_guard_delete;
CREATE TRIGGER tr_aud_overseers_guard_delete BEFORE DELETE ON AUD_OVERSEERS
BEGIN
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft; start and stop the overseer with etl-craft server') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_OVERSEERS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_waits_guard_insert;
CREATE TRIGGER tr_aud_gate_waits_guard_insert BEFORE INSERT ON AUD_GATE_WAITS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_waits_guard_update;
CREATE TRIGGER tr_aud_gate_waits_guard_update BEFORE UPDATE ON AUD_GATE_WAITS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_gate_waits_guard_delete;
CREATE TRIGGER tr_aud_gate_waits_guard_delete BEFORE DELETE ON AUD_GATE_WAITS
BEGIN
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft; change runs with etl-craft run, mark, cancel or reopen') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_GATE_WAITS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_cfg_api_tokens_guard_insert;
CREATE TRIGGER tr_cfg_api_tokens_guard_insert BEFORE INSERT ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_cfg_api_tokens_guard_update;
CREATE TRIGGER tr_cfg_api_tokens_guard_update BEFORE UPDATE ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_cfg_api_tokens_guard_delete;
CREATE TRIGGER tr_cfg_api_tokens_guard_delete BEFORE DELETE ON CFG_API_TOKENS
BEGIN
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft; manage API tokens with etl-craft token') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'CFG_API_TOKENS is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_alert_deliveries_guard_insert;
CREATE TRIGGER tr_aud_alert_deliveries_guard_insert BEFORE INSERT ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_alert_deliveries_guard_update;
CREATE TRIGGER tr_aud_alert_deliveries_guard_update BEFORE UPDATE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;

DROP TRIGGER tr_aud_alert_deliveries_guard_delete;
CREATE TRIGGER tr_aud_alert_deliveries_guard_delete BEFORE DELETE ON AUD_ALERT_DELIVERIES
BEGIN
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft; alert deliveries are recorded by etl-craft itself') WHERE etl_craft_actor() IS NULL;
    SELECT RAISE(ABORT, 'AUD_ALERT_DELIVERIES is written only by etl-craft: a project migration writes only the metadata tables') WHERE etl_craft_purpose() IS 'project-sql';
END;
