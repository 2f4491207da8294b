-- The products as delivered in seeds/products.csv, merged into dim.products by product_code.
SELECT product_code, product_name, product_line
FROM ref.products
