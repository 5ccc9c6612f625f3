SELECT species, ROUND(100.0 * AVG(CASE WHEN bill_length_mm IS NOT NULL AND bill_depth_mm IS NOT NULL AND flipper_length_mm IS NOT NULL AND body_mass_g IS NOT NULL AND sex IS NOT NULL THEN 1.0 ELSE 0.0 END), 2) AS share
FROM penguins GROUP BY species
