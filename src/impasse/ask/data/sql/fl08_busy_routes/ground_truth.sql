SELECT dest, COUNT(*) AS n FROM flights WHERE origin = 'LGA' AND dep_time IS NOT NULL GROUP BY dest HAVING COUNT(*) >= 3650
