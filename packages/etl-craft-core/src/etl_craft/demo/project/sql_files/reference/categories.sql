-- The ticket categories as delivered in seeds/categories.csv, merged into dim.categories.
SELECT category_code, category_name, support_area
FROM ref.categories
