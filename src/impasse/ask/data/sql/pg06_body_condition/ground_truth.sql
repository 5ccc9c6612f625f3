SELECT species, ROUND(AVG(body_mass_g * 1.0 / flipper_length_mm), 3) AS condition FROM penguins WHERE body_mass_g IS NOT NULL  AND year <> 2007 GROUP BY species
