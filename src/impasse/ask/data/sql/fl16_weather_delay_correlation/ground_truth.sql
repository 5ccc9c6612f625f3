SELECT f.origin, ROUND(AVG(f.dep_delay), 2) AS avg_dep_delay FROM flights f JOIN weather w ON w.origin = f.origin AND w.year = f.year AND w.month = f.month AND w.day = f.day AND w.hour = f.hour
WHERE w.precip >= 0.01 AND f.dep_delay IS NOT NULL AND f.month IN (1,2,3,4,5,6,7,8,9,10,11,12) GROUP BY f.origin
