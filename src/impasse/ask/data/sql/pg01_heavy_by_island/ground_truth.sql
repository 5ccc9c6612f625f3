SELECT p.island, COUNT(*) AS n FROM penguins p JOIN (SELECT species, sex AS g2, AVG(body_mass_g) AS m FROM penguins GROUP BY species, sex) g
ON g.species = p.species AND g.g2 = p.sex WHERE p.body_mass_g > g.m * 1.10 GROUP BY p.island
