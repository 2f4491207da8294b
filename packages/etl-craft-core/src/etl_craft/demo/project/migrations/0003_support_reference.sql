-- support_reference: the seed CSVs into ref.*, then one SCD1_MERGE per dimension.

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT v.column1, v.column2, p.PIPELINE_ID, v.column3
FROM (VALUES
    ('load_seeds', 'INGESTION', 'PYTHON'),
    ('agents_to_dim', 'ETL', 'SQL'),
    ('products_to_dim', 'ETL', 'SQL'),
    ('categories_to_dim', 'ETL', 'SQL')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_reference' AND p.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.column2, v.column3
FROM (VALUES
    ('load_seeds', 'SCRIPT_NAME', 'seeds.py'),
    ('load_seeds', 'INPUT_PARAMS',
     '{"folder": "seeds", "tables": {"agents.csv": "ref.agents", "products.csv": "ref.products", "categories.csv": "ref.categories"}}'),
    ('load_seeds', 'SOURCE_OBJECT', 'seeds/*.csv'),
    ('load_seeds', 'DOCUMENTATION', 'Replaces ref.agents, ref.products and ref.categories with the seed files, in one transaction.'),
    ('agents_to_dim', 'SQL_ACTION', 'SCD1_MERGE'),
    ('agents_to_dim', 'TARGET_OBJECT', 'dim.agents'),
    ('agents_to_dim', 'SOURCE_SQL_FILE', 'reference/agents.sql'),
    ('agents_to_dim', 'MERGE_KEY', 'agent_id'),
    ('agents_to_dim', 'MERGE_COMPARE_COLUMNS', 'agent_name|team|hired_on'),
    ('products_to_dim', 'SQL_ACTION', 'SCD1_MERGE'),
    ('products_to_dim', 'TARGET_OBJECT', 'dim.products'),
    ('products_to_dim', 'SOURCE_SQL_FILE', 'reference/products.sql'),
    ('products_to_dim', 'MERGE_KEY', 'product_code'),
    ('products_to_dim', 'MERGE_COMPARE_COLUMNS', 'product_name|product_line'),
    ('categories_to_dim', 'SQL_ACTION', 'SCD1_MERGE'),
    ('categories_to_dim', 'TARGET_OBJECT', 'dim.categories'),
    ('categories_to_dim', 'SOURCE_SQL_FILE', 'reference/categories.sql'),
    ('categories_to_dim', 'MERGE_KEY', 'category_code'),
    ('categories_to_dim', 'MERGE_COMPARE_COLUMNS', 'category_name|support_area')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_reference' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y';

INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS'
FROM (VALUES ('agents_to_dim'), ('products_to_dim'), ('categories_to_dim')) v
LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'support_reference' AND p.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column1 AND t.ACTIVE_FLAG = 'Y'
LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = 'load_seeds' AND u.ACTIVE_FLAG = 'Y';
