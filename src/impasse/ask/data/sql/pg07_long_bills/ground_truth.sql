SELECT species, sex, COUNT(*) AS n FROM penguins WHERE bill_length_mm >= 45 AND sex IS NOT NULL GROUP BY species, sex
